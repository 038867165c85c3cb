/**
 * A minimal HTTP/1.1 load client over net.Socket, so that the client, not the server, is never the
 * bottleneck on a 2-core machine: requests are prebuilt bytes, and responses are parsed just enough
 * to find their end (status line, Content-Length). Used by bench/ingest and bench/scale.
 */
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

/** A whole POST request (head and body) as bytes. */
export function rawRequest(host: string, path: string, key: string, body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const head = `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${bytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), bytes]);
}

/** A process's user+system CPU seconds so far, from /proc (Linux); NaN elsewhere. */
export function processCpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

export interface Sent {
  readonly requests: number;
  /** Responses `ok` refused. */
  readonly failures: number;
  /** The first refused response's head and body, for the message. */
  readonly firstFailure: string | null;
  readonly seconds: number;
  readonly latenciesMs: Float64Array;
}

/**
 * Runs `connections` keep-alive sockets, each with one request in flight; each socket asks `next`
 * for its next request and ends when it returns null. `ok` judges each response.
 */
export async function sendAll(
  port: number, connections: number, next: () => Buffer | null, ok: (head: string, body: Buffer) => boolean,
): Promise<Sent> {
  const latencies: number[] = [];
  let failures = 0;
  let firstFailure: string | null = null;
  const runConnection = (socket: Socket) => new Promise<void>((resolve, reject) => {
    let pending: Buffer = Buffer.alloc(0);
    let startedMs = 0;
    const sendNext = () => {
      const request = next();
      if (request === null) {
        socket.end();
        resolve();
        return;
      }
      startedMs = performance.now();
      socket.write(request);
    };
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const headEnd = pending.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      const head = pending.subarray(0, headEnd).toString('latin1');
      const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (pending.length < headEnd + 4 + length) return;
      const body = pending.subarray(headEnd + 4, headEnd + 4 + length);
      pending = pending.subarray(headEnd + 4 + length);
      latencies.push(performance.now() - startedMs);
      if (!ok(head, body)) {
        failures++;
        firstFailure ??= `${head}\n${body.toString('utf8', 0, 300)}`;
      }
      sendNext();
    });
    socket.on('error', reject);
    sendNext();
  });
  const sockets = await Promise.all(Array.from({ length: connections }, () => new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.setNoDelay(true);
    socket.once('error', reject);
  })));
  const startedMs = performance.now();
  await Promise.all(sockets.map(runConnection));
  const seconds = (performance.now() - startedMs) / 1000;
  return { requests: latencies.length, failures, firstFailure, seconds, latenciesMs: Float64Array.from(latencies).sort() };
}
