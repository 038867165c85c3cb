/**
 * One worker thread that answers jobs by id: started on first use, unref'd while it holds no job
 * (an idle worker never keeps the process alive), started again by the next job after it dies.
 * A death fails every job it held; none is left waiting. Used by the segment and ingest pools.
 */
import { Worker, type Transferable, type WorkerOptions } from 'node:worker_threads';

interface Waiter<Result> {
  readonly resolve: (result: Result) => void;
  readonly reject: (error: Error) => void;
}

export class JobWorker<Reply extends { readonly id: number }, Result> {
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiter<Result>>();

  /** `settle` turns a reply into its job's result; what it throws rejects the job. */
  constructor(
    private readonly name: string,
    private readonly url: URL,
    private readonly settle: (reply: Reply) => Result,
    private readonly options?: WorkerOptions,
  ) {}

  /** Jobs sent and not yet answered. */
  get pending(): number {
    return this.waiting.size;
  }

  /** True while a thread is started (from its first job until close() or its death). */
  get running(): boolean {
    return this.worker !== null;
  }

  /** Posts `message` (which carries `id`), moving `transfer`; resolves with its settled reply. */
  run(id: number, message: unknown, transfer: readonly Transferable[] = []): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      const worker = this.ensureWorker();
      worker.ref(); // keep the process alive while a job is pending
      worker.postMessage(message, transfer);
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.url, this.options);
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if (!waiter) return;
      try {
        waiter.resolve(this.settle(reply));
      } catch (error) {
        waiter.reject(error as Error);
      }
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`${this.name} worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
