/**
 * Request and response messages: header + body for every API and version in messages/index.ts.
 * Request header v1 = api_key int16, api_version int16, correlation_id int32, client_id
 * nullable_string; v2 (flexible versions) adds a tag section (client_id stays a classic string).
 * Response header v0 = correlation_id int32; v1 adds a tag section, except for ApiVersions.
 * Payloads here exclude the int32 frame size; frame.ts adds and strips it.
 */
import { ApiKey } from './api-keys.js';
import { MESSAGES } from './messages/index.js';
import { KafkaDecodeError, Reader } from './reader.js';
import { decodeStruct, encodeStruct, type MessageSpec, type Struct } from './schema.js';
import { Writer } from './writer.js';

export interface RequestHeader {
  readonly api_key: number;
  readonly api_version: number;
  readonly correlation_id: number;
  readonly client_id: string | null;
}

export interface KafkaRequest {
  readonly header: RequestHeader;
  readonly body: Struct;
}

/** An API key or version we do not serve; the header was decoded so the broker can reply. */
export class UnsupportedVersionError extends Error {
  override name = 'UnsupportedVersionError';
  constructor(readonly header: RequestHeader) {
    super(`unsupported api ${header.api_key} v${header.api_version}`);
  }
}

function specFor(apiKey: number, version: number): MessageSpec | undefined {
  const spec = MESSAGES.get(apiKey);
  if (!spec || version < spec.minVersion || version > spec.maxVersion) return undefined;
  return spec;
}

function decodeRequestHeader(reader: Reader): RequestHeader {
  return {
    api_key: reader.int16(),
    api_version: reader.int16(),
    correlation_id: reader.int32(),
    client_id: reader.nullableString(),
  };
}

/** Decodes one request payload; throws KafkaDecodeError or UnsupportedVersionError. */
export function decodeRequest(payload: Buffer): KafkaRequest {
  const reader = new Reader(payload);
  const header = decodeRequestHeader(reader);
  const spec = specFor(header.api_key, header.api_version);
  if (!spec) throw new UnsupportedVersionError(header);
  const flexible = header.api_version >= spec.flexibleFrom;
  if (flexible) reader.skipTags();
  const body = decodeStruct(spec.request, reader, header.api_version, flexible);
  if (reader.remaining !== 0) {
    throw new KafkaDecodeError(`${reader.remaining} trailing bytes in ${spec.name} request`);
  }
  return { header, body };
}

export function encodeRequest(header: RequestHeader, body: Struct): Buffer {
  const spec = specFor(header.api_key, header.api_version);
  if (!spec) throw new UnsupportedVersionError(header);
  const flexible = header.api_version >= spec.flexibleFrom;
  const writer = new Writer();
  writer.int16(header.api_key).int16(header.api_version).int32(header.correlation_id);
  writer.nullableString(header.client_id);
  if (flexible) writer.emptyTags();
  encodeStruct(spec.request, writer, body, header.api_version, flexible);
  return writer.toBuffer();
}

function responseHasHeaderTags(apiKey: number, version: number, spec: MessageSpec): boolean {
  return version >= spec.flexibleFrom && apiKey !== ApiKey.ApiVersions;
}

/** Encodes a response *with* its int32 frame size, ready to write to the socket. */
export function encodeResponseFrame(
  apiKey: number, version: number, correlationId: number, body: Struct,
): Buffer {
  const spec = specFor(apiKey, version);
  if (!spec) throw new UnsupportedVersionError({
    api_key: apiKey, api_version: version, correlation_id: correlationId, client_id: null,
  });
  const writer = new Writer(1024);
  writer.int32(0).int32(correlationId);
  if (responseHasHeaderTags(apiKey, version, spec)) writer.emptyTags();
  encodeStruct(spec.response, writer, body, version, version >= spec.flexibleFrom);
  writer.int32At(0, writer.offset - 4);
  return writer.toBuffer();
}

export function decodeResponse(
  apiKey: number, version: number, payload: Buffer,
): { correlation_id: number; body: Struct } {
  const spec = specFor(apiKey, version);
  if (!spec) throw new KafkaDecodeError(`unsupported api ${apiKey} v${version}`);
  const reader = new Reader(payload);
  const correlation_id = reader.int32();
  if (responseHasHeaderTags(apiKey, version, spec)) reader.skipTags();
  const body = decodeStruct(spec.response, reader, version, version >= spec.flexibleFrom);
  if (reader.remaining !== 0) {
    throw new KafkaDecodeError(`${reader.remaining} trailing bytes in ${spec.name} response`);
  }
  return { correlation_id, body };
}
