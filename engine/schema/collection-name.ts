/** Collection name rules of docs/api.md §4: 1-64 characters, no `$`, no leading `_`, no leading or trailing `.`. */
import { ApiError } from '../base/errors.js';
import { COLLECTION_NAME_CHARS_MAX } from '../base/limits.js';

export function validateCollectionName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new ApiError('InvalidCollectionNameError', 'Collection name must be a non-empty string.');
  }
  if (name.length > COLLECTION_NAME_CHARS_MAX) {
    throw new ApiError('InvalidCollectionNameError',
      `Collection name must be at most ${COLLECTION_NAME_CHARS_MAX} characters; got ${name.length}.`);
  }
  if (name.includes('$')) {
    throw new ApiError('InvalidCollectionNameError', 'Collection name must not contain "$".');
  }
  if (name.startsWith('_')) {
    throw new ApiError('InvalidCollectionNameError', 'Collection name must not start with "_".');
  }
  if (name.startsWith('.') || name.endsWith('.')) {
    throw new ApiError('InvalidCollectionNameError', 'Collection name must not start or end with ".".');
  }
  // Control characters would make names unprintable in logs and paths.
  if (/[\u0000-\u001f]/.test(name)) {
    throw new ApiError('InvalidCollectionNameError', 'Collection name must not contain control characters.');
  }
}
