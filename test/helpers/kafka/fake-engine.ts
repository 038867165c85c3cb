/**
 * An in-memory TallyEngine with just what the Kafka broker uses: keys, events.append (objects only,
 * svc.id/created_at added), the per-collection log, onAppend and committed offsets. It served
 * while the engine was unfinished; the fixture capture tool still uses it. Tests use the real one.
 */
import { randomUUID } from 'node:crypto';
import type {
  AppendResult, CommittedOffset, EventToWrite, KeyKind, LogRecord, ProjectInfo, TallyEngine,
  WriteContext,
} from '../../../engine/index.js';
import { ApiError } from '../../../engine/base/errors.js';

export function fakeEngine(): TallyEngine {
  const project: ProjectInfo = {
    id: 'p' + randomUUID().replaceAll('-', '').slice(0, 12), name: 'test',
    api_keys: { master: 'm-' + randomUUID(), write: 'w-' + randomUUID(), read: 'r-' + randomUUID() },
  };
  const logs = new Map<string, LogRecord[]>();
  const offsets = new Map<string, CommittedOffset[]>();
  const listeners = new Set<(projectId: string, collection: string) => void>();
  const key = (p: string, c: string) => `${p}/${c}`;
  const logOf = (p: string, c: string) => logs.get(key(p, c)) ?? [];
  const unsupported = (): never => { throw new Error('not in the fake engine'); };
  const projects = {
    create: unsupported, regenerateKey: unsupported, isAnyMasterKey: () => false,
    list: () => [project],
    get: (id: string) => (id === project.id ? project : undefined),
    authenticate(projectId: string, k: string): KeyKind | null {
      if (projectId !== project.id) return null;
      const entry = Object.entries(project.api_keys).find(([, v]) => v === k);
      return entry ? (entry[0] as KeyKind) : null;
    },
  };
  const events = {
    async append(projectId: string, events: readonly EventToWrite[], _ctx: WriteContext):
      Promise<AppendResult[]> {
      await new Promise((r) => setImmediate(r));
      const touched = new Set<string>();
      const results = events.map((e): AppendResult => {
        const ev = e.event;
        if (ev === null || typeof ev !== 'object' || Array.isArray(ev)) {
          return { ok: false, error: new ApiError('InvalidEventError', 'An event must be an object.') };
        }
        if ('bad' in ev) return { ok: false, error: new ApiError('InvalidPropertyValueError', 'bad') };
        const log = logs.get(key(projectId, e.collection)) ?? [];
        logs.set(key(projectId, e.collection), log);
        const createdAtMs = Date.now();
        const id = randomUUID();
        const svc = { id, created_at: new Date(createdAtMs).toISOString() };
        log.push({ offset: log.length, id, createdAtMs, json: JSON.stringify({ ...ev, svc }) });
        touched.add(e.collection);
        return { ok: true, offset: log.length - 1 };
      });
      for (const c of touched) for (const l of listeners) l(projectId, c);
      return results;
    },
    onAppend(listener: (projectId: string, collection: string) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    replayedTags: () => [],
    onTagged: () => () => {},
    beforeWalRemove: () => () => {},
  };
  const collections = {
    list: (projectId: string) => [...logs.keys()]
      .filter((k) => k.startsWith(projectId + '/'))
      .map((k) => ({ name: k.slice(projectId.length + 1), properties: {} })),
    get: unsupported, scanSource: unsupported, scan: unsupported,
  };
  const log = {
    bounds: (p: string, c: string) => ({ start: 0, end: logOf(p, c).length }),
    read(p: string, c: string, from: number, maxRecords: number, maxBytes: number): LogRecord[] {
      const out: LogRecord[] = [];
      let bytes = 0;
      for (const r of logOf(p, c).slice(from, from + maxRecords)) {
        if (out.length > 0 && bytes + r.json.length > maxBytes) break;
        bytes += r.json.length;
        out.push(r);
      }
      return out;
    },
    offsetForTime(p: string, c: string, ts: number): number {
      const log = logOf(p, c);
      const found = log.find((r) => r.createdAtMs >= ts);
      return found ? found.offset : log.length;
    },
  };
  const groups = {
    async commit(p: string, g: string, list: readonly CommittedOffset[]) {
      const current = (offsets.get(key(p, g)) ?? []).filter(
        (o) => !list.some((n) => n.topic === o.topic && n.partition === o.partition));
      offsets.set(key(p, g), [...current, ...list]);
    },
    fetch: (p: string, g: string) => offsets.get(key(p, g)) ?? [],
  };
  const engine = {
    created: true,
    organization: { id: 'default', key: 'org', isOrgKey: (k: string) => k === 'org' },
    projects, events, collections, log, groups,
    queries: { run: unsupported },
    flush: async () => {},
    close: async () => {},
  };
  return engine as unknown as TallyEngine;
}
