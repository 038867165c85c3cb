/**
 * The glue between uWS and the route handlers. It copies what it needs out of the stack-allocated
 * request, attaches onAborted, reads the bounded body, calls the handler and answers exactly once,
 * corked; every failure goes through respond.ts's error handler. It holds no business logic.
 */
import type { HttpRequest, HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../../engine/index.js';
import { readBody } from './body.js';
import { errorReply, preflight, writeHead, writeReply } from './respond.js';
import { streamFile } from './stream-file.js';
import type { Router } from './router.js';
import type { Ctx, Deps, Handler, Reply, RouteSpec } from './types.js';

/** Counts requests being served so shutdown can wait for in-flight writes. */
export interface ServeState {
  inFlight: number;
  closing: boolean;
  /** Called whenever inFlight drops to zero. */
  onIdle: () => void;
}

interface Head {
  readonly method: string;
  readonly path: string;
  readonly rawQuery: string;
  readonly authorization: string;
  readonly accept: string;
  readonly userAgent: string;
  readonly forwardedFor: string;
  readonly contentLength: number | null;
  readonly requestHeaders: string;
  readonly peer: string;
}

/** IP text is ASCII; a shared decoder is stateless and cheaper than Buffer.from().toString(). */
const LATIN1 = new TextDecoder('latin1');

function readHead(res: HttpResponse, req: HttpRequest, trustProxy: boolean): Head {
  const length = req.getHeader('content-length');
  const parsedLength = /^\d+$/.test(length) ? Number(length) : null;
  const method = req.getMethod().toUpperCase();
  return {
    method,
    path: req.getUrl(),
    rawQuery: req.getQuery() ?? '',
    authorization: req.getHeader('authorization').trim(),
    accept: req.getHeader('accept'),
    userAgent: req.getHeader('user-agent'),
    forwardedFor: trustProxy ? req.getHeader('x-forwarded-for') : '',
    contentLength: parsedLength,
    requestHeaders: method === 'OPTIONS' ? req.getHeader('access-control-request-headers') : '',
    peer: LATIN1.decode(res.getRemoteAddressAsText()),
  };
}

/** "::ffff:1.2.3.4" → "1.2.3.4"; the first X-Forwarded-For entry wins when present. */
function clientIp(head: Head): string {
  const forwarded = head.forwardedFor.split(',')[0]?.trim();
  const ip = forwarded || head.peer;
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

function methodNotAllowed(spec: RouteSpec, method: string): ApiError {
  const allowed = Object.keys(spec.methods).join(', ');
  return new ApiError('MethodNotAllowedError',
    `${method} is not allowed on this path; use ${allowed}.`);
}

function notFound(path: string): ApiError {
  return new ApiError('ResourceNotFoundError',
    `No resource at ${path}; paths start with /3.0/projects/<id>.`);
}

/** The handler for a method, or an error (404/405). HEAD uses the GET handler. */
interface Resolved {
  readonly spec: RouteSpec;
  readonly handler: Handler;
  readonly params: Record<string, string>;
}

function resolve(router: Router, head: Head): Resolved {
  let match;
  try {
    match = router.match(head.path);
  } catch {
    throw notFound(head.path); // a malformed percent-escape names no resource
  }
  if (match === null) throw notFound(head.path);
  const method = head.method === 'HEAD' ? 'GET' : head.method;
  const handler = match.spec.methods[method as keyof RouteSpec['methods']];
  if (handler === undefined) throw methodNotAllowed(match.spec, head.method);
  return { spec: match.spec, handler, params: { ...match.params } };
}

/** The parameters of every request without a query string (most writes): shared, and no handler changes them. */
const NO_QUERY = new URLSearchParams();

function buildCtx(head: Head, params: Record<string, string>, body: Buffer): Ctx {
  const query = head.rawQuery === '' ? NO_QUERY : new URLSearchParams(head.rawQuery);
  return {
    method: head.method,
    path: head.path,
    params,
    query,
    rawQuery: head.rawQuery,
    key: head.authorization || (query.get('api_key') ?? '').trim(),
    accept: head.accept,
    userAgent: head.userAgent,
    ip: clientIp(head),
    body,
  };
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Request ids: this process's random prefix and a counter, sent back as X-Request-Id and put in
 * every log line about the request; cheap enough for every request.
 */
const REQUEST_ID_PREFIX = randomBytes(4).toString('hex');
let requestCounter = 0;

function nextRequestId(): string {
  return `${REQUEST_ID_PREFIX}-${(requestCounter++).toString(36)}`;
}

function shuttingDown(): ApiError {
  return new ApiError('ServiceUnavailableError', 'The server is shutting down; retry.');
}

export function createDispatcher(
  router: Router, deps: Deps, trustProxy: boolean, state: ServeState,
) {
  return (res: HttpResponse, req: HttpRequest): void => {
    let aborted = false;
    let answered = false;
    let head: Head | undefined;
    let body: Promise<Buffer> | undefined;
    const requestId = nextRequestId();
    const logError = (line: string) => deps.logger ? deps.logger.write('error', line, { request_id: requestId }) : deps.log(line);
    const abortListeners: (() => void)[] = [];
    const answer = (reply: Reply): void => {
      if (aborted || answered) return;
      answered = true;
      try {
        write(reply);
      } catch (error) {
        // The socket went away between our check and the write; there is no one left to answer.
        logError(`cannot write a response: ${(error as Error).message}`);
      }
    };
    const write = (reply: Reply): void => {
      // An early 413 keeps the connection: uWS discards the rest of the body itself (the reader has
      // stopped copying), and closing while the client still uploads would reset the connection
      // before it reads our answer.
      const close = state.closing;
      if (reply.file !== undefined) {
        void streamFile(res, { ...reply, file: reply.file }, head?.method === 'HEAD',
          (callback) => abortListeners.push(callback), (r) => writeHead(r, reply, requestId));
        return;
      }
      res.cork(() => writeReply(res, reply, head?.method === 'HEAD', close, requestId));
    };
    try {
      head = readHead(res, req, trustProxy);
      res.onAborted(() => {
        aborted = true;
        for (const listener of abortListeners) listener();
      });
      if (head.method === 'OPTIONS') return answer(preflight(head.requestHeaders));
      if (state.closing) {
        return answer(errorReply(shuttingDown(), logError));
      }
      const { spec, handler, params } = resolve(router, head);
      if (BODY_METHODS.has(head.method)) {
        body = readBody(res, head.contentLength, spec.bodyBytesMax ?? 0, (listener) => abortListeners.push(listener));
      }
      state.inFlight++;
      const started = performance.now();
      const method = head.method;
      void serve(head, params, handler, body, deps, logError).then((reply) => {
        answer(reply);
        const seconds = (performance.now() - started) / 1000;
        deps.metrics?.observe(spec.pattern, method, reply.status, seconds,
          spec.pattern.endsWith('/queries/:analysis') ? params.analysis : undefined);
        // The route pattern, never the path's query string: a key may travel in api_key.
        if (deps.logger?.enabled('debug')) {
          deps.logger.write('debug', 'request', {
            request_id: requestId, method, route: spec.pattern, status: reply.status, ms: Math.round(seconds * 1e4) / 10,
          });
        }
        state.inFlight--;
        if (state.inFlight === 0) state.onIdle();
      });
    } catch (error) {
      answer(errorReply(error, logError));
    }
  };
}

/** Awaits the body, runs the handler; never rejects: failures become error replies. */
async function serve(
  head: Head,
  params: Record<string, string>,
  handler: Handler,
  body: Promise<Buffer> | undefined,
  deps: Deps,
  logError: (line: string) => void,
): Promise<Reply> {
  try {
    const bytes = body ? await body : Buffer.alloc(0);
    return await handler(buildCtx(head, params, bytes), deps);
  } catch (error) {
    return errorReply(error, logError);
  }
}
