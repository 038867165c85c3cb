/**
 * A fixed pool of query worker threads (worker.ts). The caller (admission) never submits more
 * tasks than there are workers. A task past its timeout is really cancelled: its worker is
 * terminated and replaced, and the task fails with 504 QueryIncompleteError.
 */
import { Worker } from 'node:worker_threads';
import { assert } from '../assert.js';
import { ApiError, type ErrorCode } from '../errors.js';
import { queryIncomplete } from './scan.js';
import type { QueryTask } from './task.js';
import type { WorkerReply } from './worker.js';

interface Slot {
  worker: Worker;
  /** Resolves once the worker has loaded its modules; a query's timeout starts after it. */
  ready: Promise<void>;
  busy: ((reply: WorkerReply | Error) => void) | null;
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private closed = false;

  constructor(size: number, private readonly cacheBytes: number) {
    assert(size >= 1, 'a pool has at least one worker');
    for (let s = 0; s < size; s++) this.slots.push(this.spawn());
  }

  private spawn(): Slot {
    const worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: { cacheBytes: this.cacheBytes },
    });
    let markReady = () => {};
    const slot: Slot = { worker, ready: new Promise((resolve) => (markReady = resolve)), busy: null };
    worker.on('message', (reply: WorkerReply | 'ready') => {
      if (reply === 'ready') markReady();
      else this.settle(slot, reply);
    });
    worker.on('error', (error) => this.settle(slot, error));
    worker.on('exit', (code) => {
      if (!this.closed && slot.busy) this.settle(slot, new Error(`query worker exited (${code})`));
    });
    return slot;
  }

  private settle(slot: Slot, reply: WorkerReply | Error): void {
    const done = slot.busy;
    slot.busy = null;
    done?.(reply);
  }

  async run(task: QueryTask): Promise<Record<string, unknown>> {
    const slot = this.slots.find((candidate) => candidate.busy === null);
    assert(slot !== undefined, 'admission never runs more tasks than workers');
    const id = this.nextId++;
    slot.busy = () => {};
    await slot.ready;
    const started: QueryTask = { ...task, deadlineMs: Date.now() + task.timeoutMs };
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        slot.busy = null;
        void slot.worker.terminate();
        this.slots[this.slots.indexOf(slot)] = this.spawn();
        reject(queryIncomplete(task.timeoutMs));
      }, task.timeoutMs);
      slot.busy = (reply) => {
        clearTimeout(timer);
        if (reply instanceof Error) {
          this.slots[this.slots.indexOf(slot)] = this.spawn();
          reject(reply);
        } else if (reply.ok) resolve(reply.body);
        else if (reply.code !== null) reject(new ApiError(reply.code as ErrorCode, reply.message));
        else reject(new Error(`query worker failed: ${reply.message}`));
      };
      slot.worker.postMessage({ id, task: started });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()));
  }
}
