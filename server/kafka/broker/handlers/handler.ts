/** The shape of a request handler: one decoded request in, one response body (or none) out. */
import type { KafkaRequest } from '../../protocol/codec.js';
import type { Struct } from '../../protocol/schema.js';
import type { BrokerContext, Session } from '../context.js';

/** Resolves to the response body, or null for no response (Produce with acks=0). */
export type Handler = (
  ctx: BrokerContext, session: Session, request: KafkaRequest, signal: AbortSignal,
) => Promise<Struct | null>;
