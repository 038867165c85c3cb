/**
 * The one error type of Tally and the table of its codes. Expected failures (bad input, missing
 * resources, limits) throw ApiError; broken invariants throw AssertionError (engine/base/assert.ts).
 * Wire names follow docs/api.md §3, which follows the Keen IO v3 clients.
 */
export const ERROR_STATUS = {
  InvalidEventError: 400,
  InvalidCollectionNameError: 400,
  InvalidPropertyNameError: 400,
  InvalidPropertyValueError: 400,
  InvalidSvcNamespaceProperty: 400,
  TooManyPropertiesError: 400,
  InvalidBatchError: 400,
  InvalidJsonError: 400,
  MissingRequiredRequestFieldError: 400,
  TimeframeDefinitionError: 400,
  InvalidFilterError: 400,
  InvalidPropertyNameForGeoFilter: 400,
  InvalidQueryError: 400,
  InvalidResourceNameError: 400,
  InvalidAccessKeyDefinitionError: 400,
  NonNumericTargetPropertyError: 400,
  ApproximationRequiredError: 400,
  TooManyGroupsError: 400,
  TooManyIntervalsError: 400,
  ResponseTooLargeError: 400,
  ExtractionTooLargeError: 400,
  InvalidApiKeyError: 401,
  KeyNotPermittedError: 403,
  ResourceNotFoundError: 404,
  MethodNotAllowedError: 405,
  ExtractionNotReadyError: 409,
  ExtractionFailedError: 410,
  RequestTooLargeError: 413,
  RateLimitExceededError: 429,
  TooManyConcurrentQueriesError: 429,
  InternalServerError: 500,
  NotImplementedError: 501,
  ServiceUnavailableError: 503,
  QueryIncompleteError: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly error_code: ErrorCode;

  constructor(error_code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.error_code = error_code;
    this.status = ERROR_STATUS[error_code];
  }

  toJSON(): { message: string; error_code: ErrorCode } {
    return { message: this.message, error_code: this.error_code };
  }
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}
