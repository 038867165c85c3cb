/** The Kafka broker's public face: built-in inbound (produce) and outbound (consume) listeners. */
export { startKafkaListener } from './listener.js';
export type { KafkaListener, KafkaListenerOptions } from './listener.js';
