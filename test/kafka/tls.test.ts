/** SASL_SSL: a self-signed certificate made by openssl in the test; kafkajs and kcat verify it. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startTestBroker } from '../helpers/kafka/broker.js';
import { available, run } from '../helpers/kafka/run.js';

const hasOpenssl = available('openssl', ['version']);
const hasKcat = available('kcat', ['-V']);

async function makeCert(dir: string): Promise<{ cert: Buffer; key: Buffer; certPath: string }> {
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  const out = await run('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyPath, '-out', certPath,
    '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  if (out.code !== 0) throw new Error(out.stderr);
  return { cert: fs.readFileSync(certPath), key: fs.readFileSync(keyPath), certPath };
}

t.ok(hasOpenssl, 'openssl is installed (the pretest step of npm test installs it: scripts/test-deps.mjs)');
t.ok(hasKcat, 'kcat is installed (the pretest step of npm test installs it: scripts/test-deps.mjs)');

t.test('kafkajs and kcat over SASL_SSL', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-tls-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { cert, key, certPath } = await makeCert(dir);
  const broker = await startTestBroker({ tls: { cert, key }, advertisedHost: 'localhost' });
  t.teardown(() => broker.stop());

  const producer = broker.kafka('in', undefined, { ssl: { ca: [cert] } }).producer();
  await producer.connect();
  await producer.send({ topic: 'secure', messages: [{ value: '{"tls":true}' }] });
  await producer.disconnect();
  t.equal(broker.te.engine.log.bounds(broker.te.project.id, 'secure').end, 1, 'stored over TLS');

  const plain = broker.kafka('in', undefined, { ssl: undefined }).producer({ retry: { retries: 0 } });
  await t.rejects(plain.connect(), 'a plaintext client cannot talk to the TLS listener');

  const keys = broker.te.project.api_keys;
  const out = await run('kcat', [
    '-C', '-b', `localhost:${broker.outbound.port}`, '-t', 'secure', '-o', 'beginning', '-e', '-c', '1',
    '-X', 'security.protocol=SASL_SSL', '-X', 'sasl.mechanisms=PLAIN', '-X', `ssl.ca.location=${certPath}`,
    '-X', `sasl.username=${broker.te.project.id}`, '-X', `sasl.password=${keys.read}`,
  ], undefined, 30_000);
  t.equal(out.code, 0, out.stderr);
  t.equal(JSON.parse(out.stdout.trim()).tls, true, 'kcat reads the event over SASL_SSL');
});
