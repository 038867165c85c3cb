/**
 * Starting and stopping the HTTP(S) listener on uWebSockets.js. close() stops accepting, lets the
 * requests being served finish (bounded by a drain timeout), then closes the remaining connections.
 */
import type { Metrics } from '../common/metrics.js';
import net from 'node:net';
import uWS from '@trufflesuite/uws-js-unofficial';
import type { Logger, TallyEngine } from '../../engine/index.js';
import type { ClusterWrites } from './types.js';
import { createRouter } from './app.js';
import { createDispatcher, type ServeState } from './dispatch.js';
import { registerLive } from './live.js';

export interface HttpOptions {
  readonly engine: TallyEngine;
  readonly host: string;
  /** 0 = any free port; the bound port is in the result. */
  readonly port: number;
  readonly trustProxy: boolean;
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  readonly logger: Logger;
  readonly metrics?: Metrics;
  /** Cluster mode: the write routes produce to Kafka through this. */
  readonly cluster?: ClusterWrites;
}

export interface HttpListener {
  readonly port: number;
  readonly url: string;
  /** Stops accepting, waits up to drainMs for in-flight requests, closes connections. */
  close(drainMs: number): Promise<void>;
}

function urlHost(host: string): string {
  const shown = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return shown.includes(':') ? `[${shown}]` : shown;
}

export function startHttp(options: HttpOptions): Promise<HttpListener> {
  const app = options.tls
    ? uWS.SSLApp({ cert_file_name: options.tls.certFile, key_file_name: options.tls.keyFile })
    : uWS.App();
  const state: ServeState = { inFlight: 0, closing: false, onIdle: () => {} };
  const logger = options.logger;
  const deps = {
    engine: options.engine, logger, log: (line: string) => logger.write('error', line), metrics: options.metrics,
    ...(options.cluster !== undefined && { cluster: options.cluster }),
  };
  registerLive(app, options.engine, deps.log);
  app.any('/*', createDispatcher(createRouter(), deps, options.trustProxy, state));
  return new Promise((resolve, reject) => {
    // LIBUS_LISTEN_EXCLUSIVE_PORT: without it uWS sets SO_REUSEPORT, and a second server on the
    // same port starts fine and takes half of the connections. (uWS.js takes (host, port,
    // options, cb); its typings list only (port, options, cb).)
    const listen = app.listen as unknown as (host: string, port: number, options: number,
      cb: (socket: uWS.us_listen_socket | false) => void) => void;
    listen.call(app, options.host, options.port, LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (!socket) {
        bindError(options.host, options.port).then(reject, reject);
        return;
      }
      const port = uWS.us_socket_local_port(socket as unknown as uWS.us_socket);
      const scheme = options.tls ? 'https' : 'http';
      resolve({
        port,
        url: `${scheme}://${urlHost(options.host)}:${port}`,
        close: (drainMs) => closeListener(app, socket, state, drainMs),
      });
    });
  });
}

const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/**
 * Why uWS could not listen (it says only that it could not): binding the same address with
 * node:net gives the errno (EADDRINUSE, EACCES, EADDRNOTAVAIL) as the error's code.
 */
function bindError(host: string, port: number): Promise<Error> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', (error) => resolve(error));
    probe.listen({ host, port, exclusive: true }, () => {
      probe.close(() => resolve(new Error(`cannot listen on ${host}:${port} (bad TLS certificate or key files?)`)));
    });
  });
}

async function closeListener(
  app: uWS.TemplatedApp, socket: uWS.us_listen_socket, state: ServeState, drainMs: number,
): Promise<void> {
  state.closing = true;
  uWS.us_listen_socket_close(socket);
  if (state.inFlight > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, drainMs);
      state.onIdle = () => { clearTimeout(timer); resolve(); };
    });
  }
  // uWS ≥ 20.27 has app.close(): it ends the idle keep-alive connections too.
  (app as unknown as { close?: () => void }).close?.();
}
