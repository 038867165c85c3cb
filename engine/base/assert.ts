/**
 * Invariant checks for programmer errors. Never use on user input: validate that and throw ApiError.
 * A failed assertion is a bug; the HTTP layer turns it into a 500 with a unique id.
 */
export class AssertionError extends Error {
  override name = 'AssertionError';
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new AssertionError(message);
}
