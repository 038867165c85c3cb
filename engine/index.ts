/**
 * The engine's entire public surface. The server, the Kafka broker, benchmarks and embedding
 * programs import this file and nothing deeper.
 */
export type {
  AppendOptions, AppendResult, DeletePlan, EngineStats, ExtractionJob, BatchAppendResult, CollectionSchema, CommittedOffset, EngineOptions, EventToWrite, KeyKind, LogRecord,
  ProjectInfo, ReplayedTag, StampResult, TallyEngine, WriteContext,
  AccessKeyService, CatalogKind, CatalogRecord, CatalogService, CollectionService, OrgState, DatasetService, EventService, GroupOffsetService, LogService, OrganizationService,
  ProjectService, QueryService, SavedQueryService,
} from './services/types.js';
export type { Column, ColumnChunk, SchemaType, ScanSource, SegmentFooter } from './storage/chunk.js';
export { TAG_BOOL, TAG_LIST, TAG_MISSING, TAG_NULL, TAG_NUM, TAG_STR } from './storage/chunk.js';
export { EventBuilder } from './storage/event-json.js';
export { ApiError, ERROR_STATUS, isApiError } from './base/errors.js';
export type { ErrorCode } from './base/errors.js';
export { AssertionError } from './base/assert.js';
export * as limits from './base/limits.js';
export { openEngine } from './services/open.js';
export { DataDirError, LOCK_FILE } from './base/data-dir-lock.js';
export type { RunInformation, SavedQuery } from './catalog/saved-queries.js';
export type { DatasetDefinition, DatasetView } from './catalog/datasets.js';
export { PERMISSIONS, applyAutofill, carriesForcedFilters, withForcedFilters, type AccessKey, type AccessKeyOptions, type NameList, type Permission } from './catalog/access-keys.js';
export { LOG_LEVELS, jsonLogger, type LogFields, type LogLevel, type Logger } from './base/logger.js';
export { MEMORY_BUDGET_MIN_BYTES } from './base/limits.js';
export { defaultMemoryBudget, parseBytes } from './base/memory.js';
export { parseBatchBody, parseJson, parseJsonBody } from './ingest/batch.js';
export { isAsyncExtraction } from './query/exec/jobs.js';
export { AGGREGATE_KINDS, ANALYSES, type AggregateKind, type Analysis } from './query/plan/plan.js';
export { validateCollectionName } from './schema/collection-name.js';
