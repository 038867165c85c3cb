/**
 * Single-event appends made in the same turn of the event loop, written as one append call per
 * project: a tracking client sends one event a request, and a server under load reads dozens of
 * such requests from its sockets before it next yields. One call prepares them all with one
 * receipt time, one leaf encoding and one WAL record (so one frame, one checksum and one group
 * commit entry), where a call each cost 7.6 µs of the thread that serves writes per event against
 * 1.6 µs (2026-11-27, 64 events). Each caller still gets its own result: an event refused is
 * refused alone, and a stored one is acknowledged after the fsync of its record, as before.
 */
import type { AppendResult, EventToWrite, WriteContext } from './types.js';

interface Waiting {
  readonly event: EventToWrite;
  readonly ctx: WriteContext;
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (error: unknown) => void;
}

/** Appends `events` of `projectId`, each with its own context; resolves with a result per event. */
export type AppendEach = (projectId: string, events: readonly EventToWrite[], contexts: readonly WriteContext[]) => Promise<AppendResult[]>;

export class SingleAppends {
  /** Per project, the appends waiting for the end of this turn, in call order. */
  private waiting = new Map<string, Waiting[]>();
  private scheduled = false;

  constructor(private readonly appendEach: AppendEach) {}

  /** Appends one event with the others of this turn; resolves with its result alone, as append([event]) would. */
  add(projectId: string, event: EventToWrite, ctx: WriteContext): Promise<AppendResult[]> {
    return new Promise((resolve, reject) => {
      let list = this.waiting.get(projectId);
      if (list === undefined) this.waiting.set(projectId, list = []);
      list.push({ event, ctx, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Sends every project's waiting appends as one call each. */
  private flush(): void {
    const waiting = this.waiting;
    this.waiting = new Map();
    this.scheduled = false;
    for (const [projectId, list] of waiting) {
      const events = list.map((w) => w.event);
      const contexts = list.map((w) => w.ctx);
      this.appendEach(projectId, events, contexts).then((results) => {
        for (let i = 0; i < list.length; i++) list[i]!.resolve([results[i]!]);
      }, (error: unknown) => {
        for (const w of list) w.reject(error);
      });
    }
  }
}
