/**
 * No request may crash the server or leave a connection hanging: malformed HTTP, aborted uploads,
 * bad escapes, odd bodies and bursts of clients that vanish. After each the server still answers.
 * Also the CLI surface: --help, bad flags, HTTPS with --tls-cert/--tls-key.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { client } from '../helpers/http.js';
import { MAIN_JS, startServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let api: ReturnType<typeof client>;
let port: number;

t.before(async () => {
  server = await startServer();
  api = client(server.url);
  port = Number(new URL(server.url).port);
});
t.teardown(async () => {
  await server.stop();
  server.cleanup();
});

/** Sends raw bytes, optionally ends, and resolves with what came back before close or timeout. */
function raw(bytes: string | Buffer, options: { end?: boolean; waitMs?: number } = {}): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const finish = () => { socket.destroy(); resolve(received); };
    const timer = setTimeout(finish, options.waitMs ?? 1_000);
    socket.on('data', (chunk) => { received += chunk.toString('latin1'); });
    socket.on('close', () => { clearTimeout(timer); resolve(received); });
    socket.on('error', () => { clearTimeout(timer); resolve(received); });
    socket.write(bytes);
    if (options.end) socket.end();
  });
}

async function alive(t: { equal: (...args: any[]) => any }): Promise<void> {
  const response = await api.post(`/3.0/projects/${server.projectId}/events/alive`, { key: server.keys.write, body: { ok: 1 } });
  t.equal(response.status, 201, 'the server still records');
}

t.test('malformed HTTP is refused without harm', async (t) => {
  await raw('GARBAGE\r\n\r\n', { end: true });
  await raw('GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', { end: true });
  await raw(Buffer.alloc(70_000, 0x41), { end: true });
  await raw(`GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, { end: true });
  await alive(t);
});

t.test('clients that vanish mid-body do not hang or crash anything', async (t) => {
  const path = `/3.0/projects/${server.projectId}/events`;
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${server.keys.write}\r\nContent-Type: application/json\r\n`;
  await Promise.all(Array.from({ length: 20 }, (_, index) =>
    raw(`${head}Content-Length: 1000\r\n\r\n{"c": [{"i": ${index}}`, { end: true, waitMs: 200 })));
  const chunked = await raw(`${head}Transfer-Encoding: chunked\r\n\r\n5\r\n{"c":\r\n`, { waitMs: 300 });
  t.equal(chunked, '', 'nothing is answered before the body ends');
  await alive(t);
});

t.test('a complete raw request gets exactly one answer; pipelining never hangs', async (t) => {
  const body = '{"a": 1}';
  const request = `POST /3.0/projects/${server.projectId}/events/raw HTTP/1.1\r\nHost: x\r\n` +
    `Authorization: ${server.keys.write}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const one = await raw(request, { waitMs: 1_000 });
  t.equal(one.match(/HTTP\/1\.1 201/g)?.length, 1, 'one request, one answer');
  // uWS cannot hold a pipelined request while an async answer is pending: it closes the connection
  // (the client sees a reset, as for any lost connection). Either way nothing hangs.
  const started = Date.now();
  const two = await raw(request + request, { waitMs: 5_000 });
  const answers = two.match(/HTTP\/1\.1 201/g)?.length ?? 0;
  t.ok(answers === 2 || Date.now() - started < 4_000, `pipelined: ${answers} answers or a prompt close`);
});

t.test('bad escapes, odd methods and odd bodies', async (t) => {
  const bad = await api.get(`/3.0/projects/${server.projectId}/events/%E0%A4%A`, { key: server.keys.read });
  t.equal(bad.status, 404);
  const patch = await api.send('PATCH', `/3.0/projects/${server.projectId}/events`, { key: server.keys.write, body: {} });
  t.equal(patch.status, 405);
  const binary = await api.post(`/3.0/projects/${server.projectId}/events/bin`, {
    key: server.keys.write, body: Buffer.from([0xff, 0xfe, 0x00, 0x01]),
  });
  t.equal(binary.status, 400);
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  const nested = await api.post(`/3.0/projects/${server.projectId}/events/deep`, { key: server.keys.write, body: `{"a":${deep}}` });
  t.equal(nested.status, 400);
  const deepObject = '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000);
  const nestedObject = await api.post(`/3.0/projects/${server.projectId}/events/deep`, { key: server.keys.write, body: deepObject });
  t.equal(nestedObject.status, 400);
  const query = await api.get(`/3.0/projects/${server.projectId}/queries/count?event_collection=%7B%22&timeframe=%5B%5D&filters=%7Bbroken`, { key: server.keys.read });
  t.equal(query.status, 400);
  await alive(t);
});

t.test('a burst of aborted requests', async (t) => {
  const controllers = Array.from({ length: 50 }, () => new AbortController());
  const requests = controllers.map((controller, index) => fetch(`${server.url}/3.0/projects/${server.projectId}/events`, {
    method: 'POST', signal: controller.signal, headers: { Authorization: server.keys.write, 'Content-Type': 'application/json' },
    body: JSON.stringify({ burst: Array.from({ length: 2_000 }, (_, i) => ({ i, index })) }),
  }).catch(() => null));
  controllers.forEach((controller, index) => { if (index % 2 === 0) controller.abort(); });
  await Promise.all(requests);
  await alive(t);
});

t.test('after all that the server process is still the same one', async (t) => {
  t.equal(server.child.exitCode, null, 'the server never died');
  await alive(t);
});

t.test('--help lists the flags and exits 0; a bad flag exits 2', async (t) => {
  const help = execFileSync(process.execPath, [MAIN_JS, '--help'], { env: { ...process.env, NODE_OPTIONS: '' } }).toString();
  for (const name of ['--data', '--host', '--http-port', '--kafka-in-port', '--kafka-out-port', '--org-id', '--org-key',
    '--tls-cert', '--tls-key', '--kafka-tls-cert', '--kafka-tls-key', '--kafka-bridge', '--trust-proxy']) {
    t.match(help, name);
  }
  const env = { ...process.env, NODE_OPTIONS: '' };
  const failed = await promisify(execFile)(process.execPath, [MAIN_JS, '--bogus'], { env })
    .then(() => ({ code: 0, stderr: '' }), (error: { code?: number; stderr?: string }) => error);
  t.equal(failed.code, 2, String(failed.stderr).slice(0, 300));
  t.match(String(failed.stderr), /unknown flag --bogus/);
});

t.test('HTTPS with --tls-cert and --tls-key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tally-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert,
      '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  } catch {
    t.pass('openssl is not available; HTTPS not tested');
    return;
  }
  const secure = await startServer({ args: ['--tls-cert', cert, '--tls-key', key] });
  t.teardown(async () => { await secure.stop(); secure.cleanup(); });
  t.match(secure.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const https = await import('node:https');
  const status = await new Promise<number>((resolve, reject) => {
    const request = https.request(`${secure.url}/3.0/projects/${secure.projectId}/events/tls`, {
      method: 'POST', rejectUnauthorized: false,
      headers: { Authorization: secure.keys.write, 'Content-Type': 'application/json' },
    }, (response) => { response.resume(); resolve(response.statusCode ?? 0); });
    request.on('error', reject);
    request.end('{"secure": true}');
  });
  t.equal(status, 201);
});
