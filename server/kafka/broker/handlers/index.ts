/** The handler of each API key. Keys absent here are not served (the connection closes). */
import { ApiKey } from '../../protocol/api-keys.js';
import { handleApiVersions } from './api-versions.js';
import { handleFetch } from './fetch.js';
import { handleFindCoordinator } from './find-coordinator.js';
import { handleHeartbeat, handleJoinGroup, handleLeaveGroup, handleSyncGroup } from './groups.js';
import type { Handler } from './handler.js';
import { handleInitProducerId } from './init-producer-id.js';
import { handleListOffsets } from './list-offsets.js';
import { handleMetadata } from './metadata.js';
import { handleOffsetCommit, handleOffsetFetch } from './offsets.js';
import { handleProduce } from './produce.js';
import { handleSaslAuthenticate, handleSaslHandshake } from './sasl.js';

export const HANDLERS: ReadonlyMap<number, Handler> = new Map<number, Handler>([
  [ApiKey.Produce, handleProduce],
  [ApiKey.Fetch, handleFetch],
  [ApiKey.ListOffsets, handleListOffsets],
  [ApiKey.Metadata, handleMetadata],
  [ApiKey.OffsetCommit, handleOffsetCommit],
  [ApiKey.OffsetFetch, handleOffsetFetch],
  [ApiKey.FindCoordinator, handleFindCoordinator],
  [ApiKey.JoinGroup, handleJoinGroup],
  [ApiKey.Heartbeat, handleHeartbeat],
  [ApiKey.LeaveGroup, handleLeaveGroup],
  [ApiKey.SyncGroup, handleSyncGroup],
  [ApiKey.SaslHandshake, handleSaslHandshake],
  [ApiKey.ApiVersions, handleApiVersions],
  [ApiKey.InitProducerId, handleInitProducerId],
  [ApiKey.SaslAuthenticate, handleSaslAuthenticate],
]);

/** APIs allowed before SASL authentication completes. */
export const PRE_AUTH_APIS: ReadonlySet<number> = new Set<number>([
  ApiKey.ApiVersions, ApiKey.SaslHandshake, ApiKey.SaslAuthenticate,
]);
