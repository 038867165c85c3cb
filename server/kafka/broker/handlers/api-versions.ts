/**
 * ApiVersions: the advertised matrix comes straight from the message registry, so what we decode
 * and what we advertise cannot drift. Every min is advertised as 0 (librdkafka feature checks).
 */
import { KafkaError } from '../../protocol/errors.js';
import { MESSAGES } from '../../protocol/messages/index.js';
import type { Struct } from '../../protocol/schema.js';
import type { Handler } from './handler.js';

function apiVersionsBody(): Struct {
  const api_keys = [...MESSAGES.values()]
    .map((s) => ({ api_key: s.apiKey, min_version: s.minVersion, max_version: s.maxVersion }))
    .sort((a, b) => a.api_key - b.api_key);
  return { error_code: KafkaError.NONE, api_keys, throttle_time_ms: 0 };
}

export const handleApiVersions: Handler = async () => apiVersionsBody();
