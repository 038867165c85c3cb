/**
 * The registry of every API we implement, keyed by API key. ApiVersions is answered from this
 * table, so it is the single source of the advertised version matrix.
 */
import type { MessageSpec } from '../schema.js';
import { apiVersions } from './api-versions.js';
import { fetch } from './fetch.js';
import { findCoordinator } from './find-coordinator.js';
import { heartbeat } from './heartbeat.js';
import { initProducerId } from './init-producer-id.js';
import { joinGroup } from './join-group.js';
import { leaveGroup } from './leave-group.js';
import { listOffsets } from './list-offsets.js';
import { metadata } from './metadata.js';
import { offsetCommit } from './offset-commit.js';
import { offsetFetch } from './offset-fetch.js';
import { produce } from './produce.js';
import { saslAuthenticate } from './sasl-authenticate.js';
import { saslHandshake } from './sasl-handshake.js';
import { syncGroup } from './sync-group.js';

export const MESSAGES: ReadonlyMap<number, MessageSpec> = new Map([
  produce, fetch, listOffsets, metadata, offsetCommit, offsetFetch, findCoordinator, joinGroup,
  heartbeat, leaveGroup, syncGroup, saslHandshake, apiVersions, initProducerId, saslAuthenticate,
].map((spec) => [spec.apiKey, spec] as const));

export { apiVersions };
