/**
 * Per-project, per-category request limits of the seed: a fixed one-minute window per
 * (project, category); the request that exceeds the limit blocks the category for the next
 * minute (429 RateLimitExceededError naming the limit and when it lifts). Categories are
 * independent. The clock comes in from the service, so tests control time.
 */
import { ApiError } from './errors.js';
import { RATE_LIMIT_WINDOW_MS } from './limits.js';

export type RateCategory = 'query' | 'extraction' | 'delete' | 'collection_delete';

const NAMES: Readonly<Record<RateCategory, string>> = {
  query: 'ad-hoc queries', extraction: 'extractions', delete: 'deletes',
  collection_delete: 'collection deletes',
};

interface Window {
  startMs: number;
  count: number;
  blockedUntilMs: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly clock: () => number) {}

  /** Counts one request; throws 429 when the category is blocked or this request exceeds it. */
  take(projectId: string, category: RateCategory, perMinute: number): void {
    const now = this.clock();
    const key = `${category}\u0000${projectId}`;
    let window = this.windows.get(key);
    if (!window) this.windows.set(key, (window = { startMs: now, count: 0, blockedUntilMs: 0 }));
    if (now < window.blockedUntilMs) throw limited(category, perMinute, window.blockedUntilMs, now);
    if (now - window.startMs >= RATE_LIMIT_WINDOW_MS) {
      window.startMs = now;
      window.count = 0;
    }
    window.count++;
    if (window.count > perMinute) {
      window.blockedUntilMs = now + RATE_LIMIT_WINDOW_MS;
      window.startMs = window.blockedUntilMs;
      window.count = 0;
      throw limited(category, perMinute, window.blockedUntilMs, now);
    }
  }
}

function limited(category: RateCategory, perMinute: number, untilMs: number, now: number): ApiError {
  const name = NAMES[category];
  const seconds = Math.ceil((untilMs - now) / 1000);
  return new ApiError('RateLimitExceededError',
    `rate limit exceeded: at most ${perMinute} ${name} per minute per project; ${name} are ` +
    `blocked until ${new Date(untilMs).toISOString()} (in ${seconds} seconds)`);
}
