/**
 * The live view of a collection (issue 12): `GET /3.0/projects/<id>/events/<collection>/live` as
 * Server-Sent Events. It sends the latest events already stored, then every event appended after,
 * read from the engine's collection log (the same log the outbound Kafka view reads) whenever the
 * engine reports an append. Read or Master Key, from `?api_key=` (EventSource cannot set headers).
 * It is a raw uWS route because the Reply of the other routes is answered once, not streamed.
 */
import { randomBytes } from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp } from '@trufflesuite/uws-js-unofficial';
import type { TallyEngine } from '../../engine/index.js';
import { ApiError, validateCollectionName } from '../../engine/index.js';
import { LIVE_BACKLOG_BYTES_MAX, LIVE_BACKLOG_EVENTS_MAX, LIVE_HEARTBEAT_MS, LIVE_READ_BYTES_MAX, LIVE_READ_EVENTS_MAX, LIVE_STREAMS_MAX } from '../common/limits.js';
import { requireProjectKey } from './auth.js';
import { errorReply, writeReply } from './respond.js';

interface Stream {
  readonly res: HttpResponse;
  readonly projectId: string;
  readonly collection: string;
  next: number;
  closed: boolean;
}

/** A percent-decoded path parameter; a malformed escape names no resource (404, as the router). */
function param(req: HttpRequest, index: number): string {
  const raw = req.getParameter(index) ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ApiError('ResourceNotFoundError', `No resource at a path with the malformed escape "${raw}".`);
  }
}

/** Writes what the log holds from stream.next on; ends a stream whose client reads too slowly. */
function pump(engine: TallyEngine, stream: Stream): void {
  if (stream.closed) return;
  for (;;) {
    const records = engine.log.read(stream.projectId, stream.collection, stream.next,
      LIVE_READ_EVENTS_MAX, LIVE_READ_BYTES_MAX);
    if (records.length === 0) return;
    let text = '';
    for (const record of records) {
      text += `id: ${record.offset}\ndata: ${record.json}\n\n`;
      stream.next = record.offset + 1;
    }
    stream.res.cork(() => stream.res.write(text));
    if (stream.res.getWriteOffset() > LIVE_BACKLOG_BYTES_MAX) {
      stream.closed = true;
      stream.res.cork(() => stream.res.end());
      return;
    }
    if (records.length < LIVE_READ_EVENTS_MAX) return;
  }
}

/** The first offset to send: after Last-Event-ID on a reconnect, else the latest few events. */
function startOffset(engine: TallyEngine, projectId: string, collection: string, lastId: string): number {
  const { start, end } = engine.log.bounds(projectId, collection);
  if (/^\d+$/.test(lastId)) return Math.max(start, Math.min(end, Number(lastId) + 1));
  return Math.max(start, end - LIVE_BACKLOG_EVENTS_MAX);
}

export function registerLive(app: TemplatedApp, engine: TallyEngine, log: (line: string) => void): void {
  let open = 0;
  const handler = (res: HttpResponse, req: HttpRequest): void => {
    // Everything is read from req here: uWS invalidates it once the handler returns.
    const query = new URLSearchParams(req.getQuery() ?? '');
    const key = req.getHeader('authorization').trim() || (query.get('api_key') ?? '').trim();
    const lastId = req.getHeader('last-event-id') || (query.get('last_event_id') ?? '');
    let projectId: string;
    let collection: string;
    try {
      projectId = param(req, 0);
      collection = param(req, 1);
      requireProjectKey(engine, projectId, key, ['read']);
      // A name no event can have would wait forever; a valid one not yet written waits for its first.
      validateCollectionName(collection);
      if (open >= LIVE_STREAMS_MAX) {
        throw new ApiError('TooManyConcurrentQueriesError',
          `At most ${LIVE_STREAMS_MAX} live views may be open at once; close one and retry.`);
      }
    } catch (error) {
      // Refusals carry an X-Request-Id as the dispatcher's replies do; a stream needs none.
      writeReply(res, errorReply(error, log), false, false, `live-${randomBytes(6).toString('hex')}`);
      return;
    }
    const stream: Stream = { res, projectId, collection, next: 0, closed: false };
    stream.next = startOffset(engine, projectId, collection, lastId);
    open++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      open--;
      clearInterval(timer);
      unsubscribe();
    };
    const unsubscribe = engine.events.onAppend((p, c) => {
      if (p !== projectId || c !== collection) return;
      try {
        pump(engine, stream);
      } catch (error) {
        // The boundary between the engine's append listeners and one viewer: end this stream only.
        log(`live view of ${collection} ended: ${(error as Error).message}`);
        stream.closed = true;
        res.cork(() => res.end());
      }
      if (stream.closed) release();
    });
    const timer = setInterval(() => {
      if (stream.closed) return release();
      res.cork(() => res.write(': keep-alive\n\n'));
    }, LIVE_HEARTBEAT_MS);
    res.onAborted(() => { stream.closed = true; release(); });
    res.writeStatus('200 OK');
    res.writeHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.writeHeader('Cache-Control', 'no-cache');
    res.writeHeader('Access-Control-Allow-Origin', '*');
    res.write('retry: 1000\n\n');
    pump(engine, stream);
  };
  app.get('/3.0/projects/:project/events/:collection/live', handler);
  app.get('/v3/projects/:project/events/:collection/live', handler);
}
