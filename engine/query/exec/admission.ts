/**
 * Query admission: at most `runningMax` queries execute at once and `waitingMax` wait; one more
 * waiter → 429 TooManyConcurrentQueriesError, a waiter not started within `startDeadlineMs` →
 * 503 ServiceUnavailableError (the seed's fast failure). First come, first served.
 */
import { ApiError } from '../../base/errors.js';

interface Waiter {
  readonly start: () => void;
  readonly timer: NodeJS.Timeout;
}

export class Admission {
  private running = 0;
  private readonly waiting: Waiter[] = [];

  /** Queries executing and queries waiting to start (the metrics' queue depths). */
  get depths(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  constructor(
    private readonly runningMax: number,
    private readonly waitingMax: number,
    private readonly startDeadlineMs: number,
  ) {}

  /** Resolves once the query may run; call the returned release exactly once afterwards. */
  acquire(): Promise<() => void> {
    if (this.running < this.runningMax) {
      this.running++;
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.waitingMax) {
      return Promise.reject(new ApiError('TooManyConcurrentQueriesError',
        `too many concurrent queries: ${this.runningMax} running and ${this.waitingMax} ` +
        'waiting; retry shortly'));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => resolve(this.releaser()),
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(new ApiError('ServiceUnavailableError',
            `the query could not start within ${this.startDeadlineMs} ms; the service is busy, ` +
            'retry shortly'));
        }, this.startDeadlineMs),
      };
      this.waiting.push(waiter);
    });
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) {
        clearTimeout(next.timer);
        next.start();
      } else {
        this.running--;
      }
    };
  }
}
