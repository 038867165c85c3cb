/**
 * Kafka error codes the listener sends (apache/kafka Errors.java), and the one mapping from a
 * Tally ApiError to a Kafka error code. Handlers never invent numeric codes elsewhere.
 */
import type { ApiError } from '../../../engine/index.js';

export const KafkaError = {
  NONE: 0,
  UNKNOWN_SERVER_ERROR: -1,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  NOT_LEADER_OR_FOLLOWER: 6,
  REQUEST_TIMED_OUT: 7,
  MESSAGE_TOO_LARGE: 10,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  INVALID_TOPIC_EXCEPTION: 17,
  RECORD_LIST_TOO_LARGE: 18,
  INVALID_REQUIRED_ACKS: 21,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  TOPIC_AUTHORIZATION_FAILED: 29,
  GROUP_AUTHORIZATION_FAILED: 30,
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  UNSUPPORTED_VERSION: 35,
  INVALID_REQUEST: 42,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  SASL_AUTHENTICATION_FAILED: 58,
  UNSUPPORTED_COMPRESSION_TYPE: 76,
  MEMBER_ID_REQUIRED: 79,
  INVALID_RECORD: 87,
} as const;

export type KafkaErrorCode = (typeof KafkaError)[keyof typeof KafkaError];

/**
 * The Kafka code for an engine error met while serving a partition: bad events are invalid
 * records, size limits are too large, missing things are unknown topics, the rest a server error.
 */
export function kafkaErrorFor(error: ApiError): KafkaErrorCode {
  switch (error.error_code) {
    case 'InvalidEventError':
    case 'InvalidPropertyNameError':
    case 'InvalidPropertyValueError':
    case 'InvalidSvcNamespaceProperty':
    case 'TooManyPropertiesError':
    case 'InvalidJsonError':
    case 'InvalidBatchError':
      return KafkaError.INVALID_RECORD;
    case 'InvalidCollectionNameError':
      return KafkaError.INVALID_TOPIC_EXCEPTION;
    case 'RequestTooLargeError':
      return KafkaError.MESSAGE_TOO_LARGE;
    case 'ResourceNotFoundError':
      return KafkaError.UNKNOWN_TOPIC_OR_PARTITION;
    case 'InvalidApiKeyError':
    case 'KeyNotPermittedError':
      return KafkaError.TOPIC_AUTHORIZATION_FAILED;
    case 'ServiceUnavailableError':
    case 'QueryIncompleteError':
      return KafkaError.REQUEST_TIMED_OUT;
    default:
      return KafkaError.UNKNOWN_SERVER_ERROR;
  }
}
