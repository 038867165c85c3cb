/**
 * Writing replies to uWS and the one HTTP error handler. Every response carries the CORS headers;
 * errors become `{message, error_code}` (500s add a unique_id that is also logged, never a stack).
 */
import { randomBytes } from 'node:crypto';
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { isApiError } from '../../engine/index.js';
import type { Reply } from './types.js';

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content', 302: '302 Found',
  400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden', 404: '404 Not Found',
  405: '405 Method Not Allowed', 409: '409 Conflict', 413: '413 Payload Too Large', 429: '429 Too Many Requests',
  500: '500 Internal Server Error', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, DELETE, OPTIONS';
const ALLOWED_HEADERS = 'Authorization, Content-Type';
const PREFLIGHT_MAX_AGE_S = '86400';

export function json(status: number, value: unknown): Reply {
  return { status, json: value };
}

/** The headers a preflight may ask for: ours plus any `*-sdk` header Keen-style clients send. */
function allowedHeaders(requested: string): string {
  const sdk = requested.split(',').map((h) => h.trim()).filter((h) => /^[\w-]+-sdk$/i.test(h));
  return [ALLOWED_HEADERS, ...sdk].join(', ');
}

export function preflight(requestedHeaders: string): Reply {
  return {
    status: 204,
    headers: [
      ['Access-Control-Allow-Methods', ALLOWED_METHODS],
      ['Access-Control-Allow-Headers', allowedHeaders(requestedHeaders)],
      ['Access-Control-Max-Age', PREFLIGHT_MAX_AGE_S],
    ],
  };
}

/** Errors of the disk under the data directory: the service cannot store now, it is not a bug. */
const STORAGE_ERRORS = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS']);

/**
 * The single error handler: ApiError → its status; a failing disk → 503; anything else is a bug
 * → 500 with an id.
 */
export function errorReply(error: unknown, log: (line: string) => void): Reply {
  if (isApiError(error)) {
    return json(error.status, { message: error.message, error_code: error.error_code });
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && STORAGE_ERRORS.has(code)) {
    log(`storage error: ${(error as Error).message}`);
    return json(503, {
      message: code === 'EIO'
        ? 'Tally could not write to its disk (EIO); nothing was changed. Retry later.'
        : `Tally's disk is full or read-only (${code}); nothing was changed. Retry once space is freed.`,
      error_code: 'ServiceUnavailableError',
    });
  }
  const uniqueId = randomBytes(12).toString('hex');
  const detail = error instanceof Error
    ? (error.stack ?? `${error.name}: ${error.message}`)
    : String(error);
  log(`error unique_id=${uniqueId} ${detail}`);
  return json(500, {
    message: `An internal error occurred; report unique_id ${uniqueId} to the operator.`,
    error_code: 'InternalServerError',
    unique_id: uniqueId,
  });
}

function encodeBody(reply: Reply): { bytes: Uint8Array | string; type: string | undefined } {
  if (reply.body !== undefined) return { bytes: reply.body, type: reply.contentType };
  if (reply.json === undefined) return { bytes: '', type: undefined };
  return { bytes: JSON.stringify(reply.json), type: 'application/json; charset=utf-8' };
}

/**
 * Writes one reply; call inside res.cork() when not in the synchronous part of a handler.
 * `headOnly` sends the headers of the reply with its Content-Length but no body.
 */
/** Status line and headers of a reply whose body is written separately (a streamed file). */
export function writeHead(res: HttpResponse, reply: Reply, requestId: string): void {
  res.writeStatus(STATUS_TEXT[reply.status] ?? String(reply.status));
  res.writeHeader('Access-Control-Allow-Origin', '*');
  res.writeHeader('X-Request-Id', requestId);
  if (reply.contentType !== undefined) res.writeHeader('Content-Type', reply.contentType);
  for (const [name, value] of reply.headers ?? []) res.writeHeader(name, value);
}

export function writeReply(
  res: HttpResponse, reply: Reply, headOnly: boolean, close: boolean, requestId: string,
): void {
  const { bytes, type } = encodeBody(reply);
  res.writeStatus(STATUS_TEXT[reply.status] ?? String(reply.status));
  res.writeHeader('Access-Control-Allow-Origin', '*');
  res.writeHeader('X-Request-Id', requestId);
  if (type !== undefined) res.writeHeader('Content-Type', type);
  for (const [name, value] of reply.headers ?? []) res.writeHeader(name, value);
  if (headOnly) {
    const length = typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.byteLength;
    res.endWithoutBody(length, close);
  } else {
    res.end(bytes, close);
  }
}
