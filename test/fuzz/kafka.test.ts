/**
 * Seeded garbage at both Kafka listeners of the real server, over raw sockets: random bytes, size
 * prefixes with garbage, huge and negative sizes, frames cut short, known and unknown api keys at
 * any version with random bodies, malformed SASL, and the same after a successful SASL login. The
 * server must stay up, keep serving HTTP, log no handler failure (the Kafka side's 500), and a
 * real kafkajs producer and consumer must still work after every round. TALLY_FUZZ_SEED=n reproduces.
 */
import { connect } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import t from 'tap';
import { client } from '../helpers/http.js';
import { mulberry32 } from '../helpers/random.js';
import { freePort, startServer, type TestServer } from '../helpers/server.js';

const SEED = Number(process.env.TALLY_FUZZ_SEED ?? 0x4b61666b);
const ROUNDS = 6;
const PER_ROUND = 120;
const CONCURRENCY = 12;
/** A connection the server neither answers nor closes within this long, after we close ours, is a hang. */
const SETTLE_MS = 3_000;

type Random = () => number;
const int = (random: Random, n: number) => Math.floor(random() * n);
const bytes = (random: Random, n: number) => Buffer.from(Array.from({ length: n }, () => int(random, 256)));


function frame(body: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

/** Request header v1: api key, version, correlation id, client id. */
function header(apiKey: number, version: number, correlationId: number, clientId = 'fuzz'): Buffer {
  const head = Buffer.alloc(10);
  head.writeInt16BE(apiKey, 0);
  head.writeInt16BE(version, 2);
  head.writeInt32BE(correlationId, 4);
  head.writeInt16BE(clientId.length, 8);
  return Buffer.concat([head, Buffer.from(clientId)]);
}

function kafkaString(text: string): Buffer {
  const length = Buffer.alloc(2);
  length.writeInt16BE(Buffer.byteLength(text));
  return Buffer.concat([length, Buffer.from(text)]);
}

/** SaslHandshake v1 (PLAIN) and SaslAuthenticate v0 with `user` and `password`. */
function saslLogin(user: string, password: string): Buffer {
  const auth = Buffer.from(`\u0000${user}\u0000${password}`);
  const authLength = Buffer.alloc(4);
  authLength.writeInt32BE(auth.length);
  return Buffer.concat([
    frame(Buffer.concat([header(17, 1, 1), kafkaString('PLAIN')])),
    frame(Buffer.concat([header(36, 0, 2), authLength, auth])),
  ]);
}

/** One connection's worth of garbage; `login` puts a valid SASL login first. */
function garbage(random: Random, login: Buffer | null): { bytes: Buffer; what: string } {
  const prefix = login ?? Buffer.alloc(0);
  let body: Buffer;
  let what: string;
  switch (int(random, 8)) {
    case 0: body = bytes(random, 1 + int(random, 300)); what = 'random bytes'; break;
    case 1: {
      const n = int(random, 200);
      body = frame(bytes(random, n)); what = `a ${n}-byte frame of garbage`; break;
    }
    case 2: {
      const size = Buffer.alloc(4);
      size.writeInt32BE([0x7fffffff, -1, -2147483648, 0, 200_000_000][int(random, 5)]!);
      body = Buffer.concat([size, bytes(random, int(random, 50))]); what = `size ${size.readInt32BE()}`; break;
    }
    case 3: {
      const whole = frame(Buffer.concat([header(int(random, 70), int(random, 15), int(random, 1000)), bytes(random, 40)]));
      body = whole.subarray(0, int(random, whole.length)); what = 'a frame cut short'; break;
    }
    case 4: {
      const apiKey = [int(random, 70), 999, -1, 32767][int(random, 4)]!;
      const version = [int(random, 15), -1, 99][int(random, 3)]!;
      body = frame(Buffer.concat([header(apiKey, version, int(random, 1 << 30)), bytes(random, int(random, 120))]));
      what = `api ${apiKey} v${version} with a random body`; break;
    }
    case 5: {
      body = frame(Buffer.concat([header(17, int(random, 3), 7), random() < 0.5 ? kafkaString('GSSAPI') : bytes(random, 10)]));
      what = 'a bad SASL handshake'; break;
    }
    case 6: {
      const length = Buffer.alloc(4);
      length.writeInt32BE(random() < 0.5 ? 1_000_000 : -5);
      body = Buffer.concat([frame(Buffer.concat([header(17, 1, 1), kafkaString('PLAIN')])), frame(Buffer.concat([header(36, 0, 2), length, bytes(random, 20)]))]);
      what = 'a bad SASL authenticate'; break;
    }
    default: {
      // Known requests whose bodies are random: Produce, Fetch, ListOffsets, Metadata, OffsetCommit,
      // OffsetFetch, FindCoordinator, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, ApiVersions.
      const apiKey = [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18][int(random, 12)]!;
      body = frame(Buffer.concat([header(apiKey, int(random, 12), int(random, 1000)), bytes(random, int(random, 300))]));
      what = `api ${apiKey} with a random body`;
    }
  }
  return { bytes: Buffer.concat([prefix, body]), what: `${login ? 'after login: ' : ''}${what}` };
}

/** Sends the bytes, then closes our side; resolves true unless the server leaves it hanging. */
function send(port: number, payload: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), SETTLE_MS + 2_000);
    socket.on('connect', () => {
      socket.write(payload);
      // Give the server a moment to answer or close, then leave: a half-written frame must not pin
      // the connection (or the server) once the client is gone.
      setTimeout(() => socket.end(), 50);
    });
    socket.on('data', () => {});
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
  });
}

let server: TestServer;
let inPort = 0;
let outPort = 0;
t.before(async () => {
  inPort = await freePort();
  outPort = await freePort();
  server = await startServer({ args: ['--kafka-in-port', String(inPort), '--kafka-out-port', String(outPort)] });
});
t.teardown(async () => {
  await server.stop();
  if (process.env.FUZZ_DEBUG) process.stderr.write(server.stderr());
  server.cleanup();
});

t.test(`Kafka fuzz at both listeners (seed ${SEED})`, { timeout: 240_000 }, async (t) => {
  t.comment(`TALLY_FUZZ_SEED=${SEED} reproduces this run`);
  const random = mulberry32(SEED);
  const kafka = (port: number, password: string) => new Kafka({
    brokers: [`127.0.0.1:${port}`], clientId: 'fuzz-check', logLevel: logLevel.NOTHING,
    sasl: { mechanism: 'plain', username: server.projectId, password }, retry: { retries: 2 },
  });
  const logins = new Map([[inPort, saslLogin(server.projectId, server.keys.write)], [outPort, saslLogin(server.projectId, server.keys.read)]]);
  const problems: string[] = [];
  let produced = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const cases = Array.from({ length: PER_ROUND }, () => {
      const port = random() < 0.5 ? inPort : outPort;
      return { port, ...garbage(random, random() < 0.5 ? logins.get(port)! : null) };
    });
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      // Bound: PER_ROUND cases shared by the workers.
      while (next < cases.length) {
        const testCase = cases[next++]!;
        if (!(await send(testCase.port, testCase.bytes))) problems.push(`hang: ${testCase.what}`);
      }
    }));
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      problems.push(`the server exited after round ${round}`);
      break;
    }
    const health = await client(server.url).get('/health');
    if (health.status !== 200) problems.push(`HTTP not healthy after round ${round}`);
    const producer = kafka(inPort, server.keys.write).producer();
    await producer.connect();
    const [result] = await producer.send({ topic: 'fuzz_check', messages: [{ value: JSON.stringify({ round }) }] });
    await producer.disconnect();
    if (result?.errorCode !== 0) problems.push(`produce failed after round ${round}`);
    else produced++;
  }
  const consumer = kafka(outPort, server.keys.read).consumer({ groupId: 'fuzz', maxWaitTimeInMs: 300 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'fuzz_check', fromBeginning: true });
  const rounds = await new Promise<number[]>((resolve, reject) => {
    const got: number[] = [];
    const timer = setTimeout(() => resolve(got), 20_000);
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push((JSON.parse(message.value!.toString()) as { round: number }).round);
        if (got.length === produced) {
          clearTimeout(timer);
          resolve(got);
        }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  t.same(problems, [], 'the server stayed up and answered after every round');
  t.same(rounds.sort((a, b) => a - b), Array.from({ length: ROUNDS }, (_, i) => i), 'a real producer and consumer work after the garbage');
  t.notMatch(server.stderr(), /kafka (in|out): api -?\d+ failed/, 'no Kafka request handler failed with an unexpected error');
});
