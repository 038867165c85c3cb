/**
 * The engine's entire public surface. The server, the Kafka broker, benchmarks and embedding
 * programs import this file and nothing deeper.
 */
export type {
  AppendOptions, AppendResult, EngineStats, ExtractionJob, BatchAppendResult, CollectionSchema, CommittedOffset, EngineOptions, EventToWrite, KeyKind, LogRecord,
  ProjectInfo, ReplayedTag, TallyEngine, WriteContext,
} from './api.js';
export type { Column, ColumnChunk, SchemaType, ScanSource, SegmentFooter } from './storage/chunk.js';
export { TAG_BOOL, TAG_LIST, TAG_MISSING, TAG_NULL, TAG_NUM, TAG_STR } from './storage/chunk.js';
export { EventBuilder } from './storage/event-json.js';
export { ApiError, ERROR_STATUS, isApiError } from './errors.js';
export type { ErrorCode } from './errors.js';
export { AssertionError } from './assert.js';
export * as limits from './limits.js';
export { openEngine } from './engine.js';
export { DataDirError, LOCK_FILE } from './data-dir-lock.js';
export type { RunInformation, SavedQuery } from './saved-queries.js';
export type { DatasetDefinition, DatasetView } from './datasets.js';
export { PERMISSIONS, applyAutofill, carriesForcedFilters, withForcedFilters, type AccessKey, type AccessKeyOptions, type NameList, type Permission } from './access-keys.js';
export { LOG_LEVELS, jsonLogger, type LogFields, type LogLevel, type Logger } from './logger.js';
export { MEMORY_BUDGET_MIN_BYTES, defaultMemoryBudget, parseBytes } from './memory.js';
export { parseJson, parseJsonBody } from './ingest/batch.js';
export { isAsyncExtraction } from './extraction-jobs.js';
export { validateCollectionName } from './schema/collection-name.js';
