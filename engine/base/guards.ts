/**
 * The two checks every service makes before it acts: the engine is not closing, and the project
 * named exists. One implementation (services/open.ts builds it), passed to each service.
 */
import { ApiError } from './errors.js';

export interface Guards {
  /** Throws 503 ServiceUnavailableError once close() has begun. */
  open(): void;
  /** Throws 404 ResourceNotFoundError when no project has this id. */
  project(projectId: string): void;
}

export function guards(isClosed: () => boolean, projectExists: (projectId: string) => boolean): Guards {
  return {
    open() {
      if (isClosed()) throw new ApiError('ServiceUnavailableError', 'Tally is shutting down.');
    },
    project(projectId) {
      if (!projectExists(projectId)) throw new ApiError('ResourceNotFoundError', `Project ${projectId} does not exist.`);
    },
  };
}

/**
 * Runs `check`, then `run`; what either throws becomes a rejected promise (for methods that
 * return one: their callers handle one kind of failure).
 */
export function guarded<T>(check: () => void, run: () => Promise<T>): Promise<T> {
  try {
    check();
    return run();
  } catch (error) {
    return Promise.reject(error);
  }
}
