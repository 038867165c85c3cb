/**
 * Starts an inbound and an outbound listener on 127.0.0.1 port 0 over a test engine, and builds
 * kafkajs clients for them. Every test that uses it calls stop() in teardown.
 */
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import { startKafkaListener, type KafkaListener } from '../../../server/kafka/broker/index.js';
import { openTestEngine, type TestEngine } from './engine.js';

export interface TestBroker {
  te: TestEngine;
  inbound: KafkaListener;
  outbound: KafkaListener;
  logs: string[];
  kafka(role: 'in' | 'out', password?: string, extra?: { ssl?: object; clientId?: string }): Kafka;
  stop(): Promise<void>;
}

export async function startTestBroker(
  options: { te?: TestEngine; tls?: { cert: Buffer; key: Buffer }; advertisedHost?: string } = {},
): Promise<TestBroker> {
  const te = options.te ?? (await openTestEngine());
  const logs: string[] = [];
  const common = {
    engine: te.engine, host: '127.0.0.1', port: 0, tls: options.tls,
    advertisedHost: options.advertisedHost ?? '127.0.0.1',
    log: (m: string) => logs.push(m), groupInitialDelayMs: 300,
  };
  const inbound = await startKafkaListener({ ...common, role: 'in' });
  const outbound = await startKafkaListener({ ...common, role: 'out' });
  return {
    te, inbound, outbound, logs,
    kafka(role, password, extra = {}) {
      const keys = te.project.api_keys;
      const sasl: SASLOptions = {
        mechanism: 'plain', username: te.project.id,
        password: password ?? (role === 'in' ? keys.write : keys.read),
      };
      const port = role === 'in' ? inbound.port : outbound.port;
      return new Kafka({
        clientId: extra.clientId ?? `test-${role}`, brokers: [`${common.advertisedHost}:${port}`],
        sasl, ssl: extra.ssl as never, logLevel: logLevel.NOTHING,
        retry: { retries: 2, initialRetryTime: 100 }, connectionTimeout: 3000,
      });
    },
    async stop() {
      await inbound.close();
      await outbound.close();
      await te.close();
    },
  };
}
