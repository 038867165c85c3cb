/**
 * Seeded fuzzing of every HTTP route over raw sockets: malformed requests of every kind (truncated
 * and invalid JSON, wrong types in every query parameter, deep nesting, invalid UTF-8, bad
 * percent-escapes and base64, lying Content-Length, bodies cut mid-way, unknown methods, huge
 * headers). The server must answer each with a status below 500 and, for errors, the documented
 * `{"message", "error_code"}` body; it must never crash or hang: after every round a normal request
 * answers at once. TALLY_FUZZ_SEED=n reproduces a run; the seed is printed.
 */
import { connect } from 'node:net';
import t from 'tap';
import { mulberry32 } from '../helpers/random.js';
import { startServer, type TestServer } from '../helpers/server.js';

const SEED = Number(process.env.TALLY_FUZZ_SEED ?? 0x7a11f022);
const ROUNDS = 12;
const PER_ROUND = 250;
const CONCURRENCY = 16;
/** A request the server does not answer within this long counts as a hang. */
const ANSWER_MS = 15_000;

type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const int = (random: Random, n: number) => Math.floor(random() * n);

const ANALYSES = ['count', 'count_unique', 'minimum', 'maximum', 'sum', 'average', 'median', 'percentile',
  'standard_deviation', 'select_unique', 'extraction', 'funnel', 'multi_analysis', 'nope', ''];
const METHODS = ['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'TRACE', 'FOO', 'get', 'CONNECT'];
const QUERY_NAMES = ['event_collection', 'target_property', 'timeframe', 'timezone', 'interval', 'filters', 'group_by',
  'order_by', 'limit', 'percentile', 'steps', 'analyses', 'latest', 'property_names', 'email', 'async', 'content_type',
  'data', 'redirect', 'api_key', 'include_metadata', 'property_name', 'name'];

/** Values of every JSON type and then some, for any parameter or property. */
function oddValue(random: Random, depth = 0): unknown {
  switch (int(random, depth > 2 ? 9 : 12)) {
    case 0: return null;
    case 1: return random() < 0.5;
    case 2: return pick(random, [0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, 9e18, -0]);
    case 3: return pick(random, ['', 'this_7_days', 'previous_3_weeks', 'this_0_days', 'this_-1_days', 'daily', 'minutely',
      'US/Pacific', 'Mars/Olympus', 'x'.repeat(300), '\u0000', '\ud800', 'price', 'svc.timestamp', 'a.b.c', '{"start":1}']);
    case 4: return pick(random, ['eq', 'ne', 'lt', 'gt', 'in', 'exists', 'contains', 'not_contains', 'within', 'regex', 'bogus']);
    case 5: return { start: oddValue(random, depth + 1), end: oddValue(random, depth + 1) };
    case 6: return [{ property_name: oddValue(random, depth + 1), operator: oddValue(random, depth + 1), property_value: oddValue(random, depth + 1) }];
    case 7: return int(random, 1000) - 500;
    case 8: return 'this_14_days';
    case 9: return [oddValue(random, depth + 1), oddValue(random, depth + 1)];
    case 10: return { a: oddValue(random, depth + 1), 'b.c': oddValue(random, depth + 1), svc: oddValue(random, depth + 1) };
    default: return Object.fromEntries(QUERY_NAMES.slice(0, int(random, 6)).map((name) => [name, oddValue(random, depth + 1)]));
  }
}

function deepNesting(random: Random): string {
  const depth = pick(random, [50, 1_000, 100_000]);
  const open = random() < 0.5 ? '[' : '{"a":';
  const close = open === '[' ? ']' : '}';
  return `{"x":${open.repeat(depth)}1${close.repeat(depth)}}`;
}

/** A body: valid, truncated, invalid, deep, invalid UTF-8, or random bytes. */
function oddBody(random: Random): Buffer {
  const valid = JSON.stringify(random() < 0.5 ? oddValue(random) : { clicks: [oddValue(random), { a: 1 }], other: oddValue(random) });
  switch (int(random, 9)) {
    case 0: return Buffer.from(valid);
    case 1: return Buffer.from(valid.slice(0, int(random, valid.length)));
    case 2: return Buffer.from(deepNesting(random));
    case 3: return Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), Buffer.from('"}')]);
    case 4: return Buffer.from(Array.from({ length: int(random, 200) }, () => int(random, 256)));
    case 5: return Buffer.from('{"a":1,}');
    case 6: return Buffer.from(`{"n":${pick(random, ['9223372036854775808', '-9223372036854775809', '1e400', 'NaN', '01', '-'])}}`);
    case 7: return Buffer.from('');
    default: return Buffer.from(JSON.stringify({ event_collection: 'clicks', timeframe: oddValue(random), filters: oddValue(random),
      interval: oddValue(random), group_by: oddValue(random), steps: oddValue(random), analyses: oddValue(random), percentile: oddValue(random) }));
  }
}

/** Percent-encodes the UTF-8 bytes (encodeURIComponent throws on a lone surrogate). */
function enc(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += /[A-Za-z0-9_.~-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return out;
}

function oddSegment(random: Random, real: string): string {
  return pick(random, [real, real, real, '%', '%zz', '%E0%A4%A', '..', 'a'.repeat(600), '%00', '%F0%9F%92%A9', 'svc', '', 'x y', '%2F']);
}

function oddPath(random: Random, project: string): string {
  const p = oddSegment(random, project);
  const c = oddSegment(random, 'clicks');
  const paths = [
    '/', '/health', '/ready', '/metrics', '/3.0', '/3.0/organizations/default/projects', `/3.0/organizations/${oddSegment(random, 'default')}/projects/${p}`,
    // Not write/read: a regenerated key would turn every later request of the run into a 401.
    `/3.0/projects/${p}/api_keys/${pick(random, ['master', 'x', ''])}/regenerate`,
    `/3.0/projects/${p}/events`, `/3.0/projects/${p}/events/${c}`, `/3.0/projects/${p}/events/${c}/properties/${oddSegment(random, 'a')}`,
    `/3.0/projects/${p}/queries/${pick(random, ANALYSES)}`, `/3.0/projects/${p}/queries/extraction/jobs/${oddSegment(random, 'abc')}`,
    `/3.0/projects/${p}/queries/extraction/jobs/${oddSegment(random, 'abc')}/result`, '/nope', '//', '/3.0/projects//events',
  ];
  return pick(random, paths);
}

function oddQuery(random: Random, keys: string[]): string {
  const parts: string[] = [];
  for (let i = int(random, 6); i > 0; i--) {
    const name = pick(random, QUERY_NAMES);
    let value: string;
    switch (int(random, 5)) {
      case 0: value = enc(JSON.stringify(oddValue(random))); break;
      case 1: value = pick(random, ['%', '%zz', '%E0%A4', '%FF%FE', '']); break;
      case 2: value = name === 'api_key' ? pick(random, keys) : enc(String(oddValue(random))); break;
      case 3: value = pick(random, ['eyJhIjoxfQ', 'eyJhIjox', '!!!notbase64', 'e30=', Buffer.from('{"n":9223372036854775808}').toString('base64'), '']); break;
      default: value = enc(pick(random, ['this_7_days', 'clicks', 'hourly', '[]', '{}', 'true']));
    }
    parts.push(`${name}=${value}`);
  }
  if (random() < 0.1) parts.push('&&=&');
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

interface Case {
  readonly bytes: Buffer;
  /** Send only this many bytes, then half-close: a body cut mid-way. */
  readonly cutAt: number | null;
  readonly head: boolean;
  readonly what: string;
  /**
   * Valid HTTP/1.1 framing (a standard method, a path without spaces, an honest
   * Content-Length, not cut): it must get an answer. Anything else may instead be closed by
   * uWebSockets' parser without one, which is neither an error reply nor a hang (a short
   * Content-Length leaves garbage after the request, and that closes the connection).
   */
  readonly framed: boolean;
}

interface Keys {
  readonly write: string;
  readonly read: string;
  readonly master: string;
  readonly all: string[];
}

/** A well-formed envelope (a real route, its method and key) around odd parameters and bodies. */
function targeted(random: Random, project: string, keys: Keys): { method: string; path: string; key: string } {
  const base = `/3.0/projects/${project}`;
  const query = oddQuery(random, keys.all);
  switch (int(random, 7)) {
    case 0: return { method: 'POST', path: `${base}/events/clicks${query}`, key: keys.write };
    case 1: return { method: 'POST', path: `${base}/events${query}`, key: keys.write };
    case 2: return { method: 'GET', path: `${base}/events/clicks?data=${pick(random, ['eyJhIjoxfQ', 'eyJhIjox', '!!', '%zz', enc(Buffer.from(JSON.stringify(oddValue(random))).toString('base64'))])}${query.replace('?', '&')}`, key: keys.write };
    case 3: return { method: 'POST', path: `${base}/queries/${pick(random, ANALYSES)}${query}`, key: keys.read };
    case 4: return { method: 'GET', path: `${base}/queries/${pick(random, ANALYSES)}${query}`, key: keys.read };
    case 5: return { method: pick(random, ['GET', 'DELETE']), path: `${base}/events/clicks${random() < 0.5 ? '/properties/a' : ''}${query}`, key: keys.master };
    default: return { method: 'GET', path: `${base}/queries/extraction/jobs/${oddSegment(random, 'abc')}${random() < 0.5 ? '/result' : ''}${query}`, key: keys.read };
  }
}

function oddRequest(random: Random, project: string, keys: Keys): Case {
  const aimed = random() < 0.6 ? targeted(random, project, keys) : null;
  const method = aimed?.method ?? pick(random, METHODS);
  const path = aimed?.path ?? oddPath(random, project) + oddQuery(random, keys.all);
  const body = ['GET', 'HEAD'].includes(method) && random() < 0.7 ? Buffer.alloc(0) : oddBody(random);
  const headers = [`Host: 127.0.0.1`];
  if (aimed !== null) headers.push(`Authorization: ${aimed.key}`);
  else if (random() < 0.85) headers.push(`Authorization: ${pick(random, keys.all)}`);
  if (random() < 0.7) headers.push(`Content-Type: ${pick(random, ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'x/y; charset=bogus'])}`);
  if (random() < 0.2) headers.push(`Accept: ${pick(random, ['image/gif', 'text/html', '*/*;q=x', ''])}`);
  if (random() < 0.05) headers.push(`X-Big: ${'b'.repeat(pick(random, [4_000, 60_000]))}`);
  let length = body.length;
  const lie = int(random, 10);
  if (lie === 0) length = body.length + 1 + int(random, 100); // promises more than it sends
  else if (lie === 1) length = Math.max(0, body.length - 1 - int(random, 10));
  if (lie === 2) headers.push('Content-Length: abc');
  else if (lie === 3) headers.push('Transfer-Encoding: chunked');
  else if (body.length > 0 || random() < 0.5) headers.push(`Content-Length: ${length}`);
  const head = Buffer.from(`${method} ${path} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`);
  const bytes = lie === 3 ? Buffer.concat([head, Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]) : Buffer.concat([head, body]);
  const cutAt = random() < 0.1 ? head.length + int(random, body.length + 1) : null;
  const framed = ['GET', 'POST', 'DELETE', 'HEAD', 'OPTIONS', 'PUT', 'PATCH'].includes(method) && !path.includes(' ')
    && lie > 3 && cutAt === null && !headers.some((h) => h.startsWith('X-Big'));
  return { bytes, cutAt, framed, head: method === 'HEAD', what: `${method} ${path.slice(0, 120)} (${body.length} body bytes, lie ${lie}, cut ${cutAt})` };
}

interface Answer {
  readonly status: number | null;
  readonly body: string;
  readonly hung: boolean;
}

/** Sends the bytes on a fresh connection and reads one response (or the close). */
function exchange(port: number, testCase: Case): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    let settled = false;
    const finish = (hung: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = data.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
      const headEnd = text.indexOf('\r\n\r\n');
      resolve({ status: match ? Number(match[1]) : null, body: headEnd === -1 ? '' : data.subarray(headEnd + 4).toString('utf8'), hung });
    };
    const timer = setTimeout(() => finish(true), ANSWER_MS);
    socket.on('connect', () => {
      if (testCase.cutAt !== null) {
        socket.end(testCase.bytes.subarray(0, testCase.cutAt));
      } else {
        socket.write(testCase.bytes);
      }
    });
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const text = data.toString('latin1');
      const headEnd = text.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headEnd));
      if (testCase.head || (length && data.length >= headEnd + 4 + Number(length[1]))) finish(false);
    });
    socket.on('error', () => finish(false));
    socket.on('close', () => finish(false));
    // A request that promised more body than it sent gets no answer until the client gives up:
    // ending our side must then close the connection rather than leave it open. (A well-framed
    // request is never cut short: uWebSockets takes a half-close as the client leaving.)
    if (!testCase.framed) socket.setTimeout(1_000, () => socket.end());
  });
}

async function healthy(port: number): Promise<boolean> {
  const answer = await exchange(port, { bytes: Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'), cutAt: null, head: false, framed: true, what: 'health' });
  return answer.status === 200;
}

let server: TestServer;
t.before(async () => {
  server = await startServer();
});
t.teardown(async () => {
  if (server.child.exitCode === null && server.child.signalCode === null) await server.stop();
  server.cleanup();
});

t.test(`HTTP fuzz (seed ${SEED})`, { timeout: 240_000 }, async (t) => {
  t.comment(`TALLY_FUZZ_SEED=${SEED} reproduces this run`);
  const random = mulberry32(SEED);
  const port = Number(new URL(server.url).port);
  const keys: Keys = {
    ...server.keys, all: [server.keys.write, server.keys.read, server.keys.master, server.orgKey, 'f'.repeat(64), '', 'x', `${server.keys.write} `],
  };
  const problems: string[] = [];
  let answered = 0;
  let framed = 0;
  let statuses = new Map<number | null, number>();
  for (let round = 0; round < ROUNDS; round++) {
    const cases = Array.from({ length: PER_ROUND }, () => oddRequest(random, server.projectId, keys));
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      // Bound: PER_ROUND cases shared by the workers.
      while (next < cases.length) {
        const testCase = cases[next++]!;
        const answer = await exchange(port, testCase);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        if (answer.status !== null) answered++;
        if (testCase.framed) framed++;
        if (answer.status === null && testCase.framed) problems.push(`no answer to a well-framed request: ${testCase.what}`);
        if (answer.hung && testCase.cutAt === null) problems.push(`hang: ${testCase.what}`);
        if (answer.status !== null && answer.status >= 500) problems.push(`${answer.status}: ${testCase.what}: ${answer.body.slice(0, 200)}`);
        if (answer.status !== null && answer.status >= 400 && !testCase.head && !errorShaped(answer.body)) {
          problems.push(`error body not in the documented shape (${answer.status}): ${testCase.what}: ${answer.body.slice(0, 200)}`);
        }
      }
    }));
    if (!(await healthy(port))) problems.push(`not healthy after round ${round}`);
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      problems.push(`the server exited (${server.child.exitCode ?? server.child.signalCode})`);
      break;
    }
  }
  t.comment(`statuses: ${JSON.stringify([...statuses].sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0)))}`);
  t.ok(framed > ROUNDS * PER_ROUND * 0.4, `${framed} well-framed requests, all answered; ${answered} of ${ROUNDS * PER_ROUND} answered in all`);
  t.same(problems.slice(0, 20), [], `no 5xx, no hang, no crash, every error shaped (${problems.length} problems)`);
  t.notMatch(server.stderr(), /unique_id/, 'no internal error was logged');
  // Shutdown waits (up to 30 s) for requests in flight: a request whose client went away mid-body
  // must not stay counted as one.
  const stopping = Date.now();
  t.equal(await server.stop(), 0, 'SIGTERM exits 0');
  t.ok(Date.now() - stopping < 10_000, 'no abandoned request is left in flight');
});

function errorShaped(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    return typeof parsed.message === 'string' && typeof parsed.error_code === 'string';
  } catch {
    return false;
  }
}
