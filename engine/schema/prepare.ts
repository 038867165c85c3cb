/**
 * Turns a client's JSON value into a stored event: checks every rule of the seed (property names,
 * values, lists, depth, the svc namespace), replaces placeholders at any depth and sets the svc
 * fields. Pure apart from mutating the given object; ids and time come from the caller.
 * Enrichment (add-ons) and flattening into columns happen after this, elsewhere.
 */
import { ApiError } from '../base/errors.js';
import {
  EVENT_DEPTH_MAX, LIST_ITEMS_MAX, NUMBER_MAX, NUMBER_MIN, PROPERTY_NAME_CHARS_MAX,
  STRING_VALUE_CHARS_MAX, UNIQUENESS_TOKEN_CHARS_MAX,
} from '../base/limits.js';
import { formatTimestamp, parseTimestamp } from './timestamp.js';

export type JsonObject = Record<string, unknown>;

export interface Placeholders {
  readonly ip: string;
  readonly userAgent: string;
}

export interface PreparedEvent {
  readonly event: JsonObject;
  readonly tsMs: number;
  readonly createdAtMs: number;
  readonly id: string;
  readonly uniquenessToken: string | null;
  readonly hasAddons: boolean;
}

const IP_PLACEHOLDER = '${svc.ip}';
const UA_PLACEHOLDER = '${svc.user_agent}';
const SVC_CLIENT_KEYS = new Set(['timestamp', 'uniqueness_token', 'location', 'addons', 'id', 'created_at']);

/**
 * Validates `value` in place and returns it with its svc object filled in. Throws ApiError.
 * `nowIso` is nowMs formatted (callers format it once per batch).
 */
export function prepareEvent(
  value: unknown, nowMs: number, id: string, ctx: Placeholders, nowIso: string = formatTimestamp(nowMs),
): PreparedEvent {
  if (!isObject(value)) {
    throw new ApiError('InvalidEventError', 'An event must be a JSON object.');
  }
  const svcValue = value.svc;
  if (svcValue !== undefined && !isObject(svcValue)) {
    throw new ApiError('InvalidSvcNamespaceProperty', 'The "svc" property must be an object.');
  }
  const svc: JsonObject = svcValue ?? {};
  for (const key in value) {
    if (key === 'svc') continue;
    checkName(key, '');
    const before = value[key];
    const after = checkValue(before, '', key, 1, ctx);
    if (after !== before) value[key] = after;
  }
  if (svc.addons !== undefined) svc.addons = replacePlaceholdersDeep(svc.addons, ctx);
  value.svc = svc;
  return prepareSvc(value, svc, nowMs, nowIso, id);
}

function prepareSvc(event: JsonObject, svc: JsonObject, nowMs: number, nowIso: string, id: string): PreparedEvent {
  for (const key in svc) {
    if (!SVC_CLIENT_KEYS.has(key)) {
      throw new ApiError('InvalidSvcNamespaceProperty',
        `"svc.${key}" is not a property clients may set; allowed: timestamp, uniqueness_token, location, addons.`);
    }
  }
  let tsMs = nowMs;
  let stamp: string | null = nowIso;
  if (svc.timestamp !== undefined && svc.timestamp !== null) {
    if (typeof svc.timestamp !== 'string' || Number.isNaN(tsMs = parseTimestamp(svc.timestamp))) {
      throw new ApiError('InvalidSvcNamespaceProperty',
        '"svc.timestamp" must be an ISO-8601 timestamp such as 2024-05-01T12:00:00.000Z or ...-08:00.');
    }
    stamp = null; // formatted below only if an add-on may read it
  }
  const token = svc.uniqueness_token;
  if (token !== undefined && (typeof token !== 'string' || token.length > UNIQUENESS_TOKEN_CHARS_MAX)) {
    throw new ApiError('InvalidSvcNamespaceProperty',
      `"svc.uniqueness_token" must be a string of at most ${UNIQUENESS_TOKEN_CHARS_MAX} characters.`);
  }
  if (svc.location !== undefined) svc.location = checkLocation(svc.location);
  if (svc.addons !== undefined && !Array.isArray(svc.addons)) {
    throw new ApiError('InvalidSvcNamespaceProperty', '"svc.addons" must be an array of add-on objects.');
  }
  const hasAddons = Array.isArray(svc.addons) && svc.addons.length > 0;
  svc.id = id;
  svc.created_at = nowIso;
  // Leaves leave svc.timestamp out (the store keeps tsMs), so only add-ons read its text: an
  // event without them keeps the client's own text, and the write path skips a format per event.
  if (stamp !== null || hasAddons) svc.timestamp = stamp ?? formatTimestamp(tsMs);
  return { event, tsMs, createdAtMs: nowMs, id, uniquenessToken: (token as string | undefined) ?? null, hasAddons };
}

function checkLocation(location: unknown): JsonObject {
  const coords = isObject(location) ? location.coordinates : undefined;
  const ok = Array.isArray(coords) && coords.length === 2 &&
    typeof coords[0] === 'number' && typeof coords[1] === 'number' &&
    Math.abs(coords[0]) <= 180 && Math.abs(coords[1]) <= 90;
  if (!ok || Object.keys(location as JsonObject).length !== 1) {
    throw new ApiError('InvalidSvcNamespaceProperty',
      '"svc.location" must be {"coordinates": [longitude, latitude]} with longitude in [-180, 180] and latitude in [-90, 90].');
  }
  return location as JsonObject;
}

/** `parent` is the path of the object holding the name ('' at the top), for messages. */
function checkName(name: string, parent: string): void {
  if (name.length === 0) {
    throw new ApiError('InvalidPropertyNameError', `Property names must not be empty (in "${parent}").`);
  }
  if (name.length > PROPERTY_NAME_CHARS_MAX) {
    throw new ApiError('InvalidPropertyNameError',
      `Property names must be fewer than 256 characters; "${name.slice(0, 40)}..." has ${name.length}.`);
  }
  if (name.includes('.')) {
    throw new ApiError('InvalidPropertyNameError', `Property names must not contain ".": "${join(parent, name)}".`);
  }
}

/**
 * Checks one value; `parent` is the dotted path of the object holding it and `key` its name (''
 * for a list item). Path strings are built only for errors and nested objects: no per-leaf garbage.
 * Returns the value to store (a placeholder replaced).
 */
function checkValue(value: unknown, parent: string, key: string, depth: number, ctx: Placeholders): unknown {
  switch (typeof value) {
    case 'string': return checkString(value, parent, key, ctx);
    case 'number': return checkNumber(value, parent, key);
    case 'boolean': return value;
    case 'object': break;
    default:
      throw new ApiError('InvalidPropertyValueError', `Unsupported value at "${join(parent, key)}".`);
  }
  if (value === null) return null;
  const path = join(parent, key);
  if (depth >= EVENT_DEPTH_MAX) {
    throw new ApiError('InvalidEventError', `Events may nest at most ${EVENT_DEPTH_MAX} levels ("${path}").`);
  }
  if (Array.isArray(value)) return checkList(value, path, ctx);
  const object = value as JsonObject;
  for (const child in object) {
    checkName(child, path);
    const before = object[child];
    const after = checkValue(before, path, child, depth + 1, ctx);
    if (after !== before) object[child] = after;
  }
  return object;
}

function join(parent: string, key: string): string {
  return parent === '' ? key : key === '' ? parent : `${parent}.${key}`;
}

function checkString(value: string, parent: string, key: string, ctx: Placeholders): string {
  if (value === IP_PLACEHOLDER) return ctx.ip;
  if (value === UA_PLACEHOLDER) return ctx.userAgent;
  if (value.length > STRING_VALUE_CHARS_MAX) {
    throw new ApiError('InvalidPropertyValueError',
      `String values must be fewer than 10,000 characters; "${join(parent, key)}" has ${value.length}.`);
  }
  return value;
}

function checkNumber(value: number, parent: string, key: string): number {
  if (!Number.isFinite(value) || value < NUMBER_MIN || value > NUMBER_MAX) {
    throw new ApiError('InvalidPropertyValueError',
      `Numbers must lie between -9223372036854775808 and 9223372036854775807 (-2^63 .. 2^63 - 1); "${join(parent, key)}" is ${Number.isFinite(value) ? value : 'out of that range'}.`);
  }
  return value;
}

/** Lists hold primitives of one JSON type; nulls are allowed among them. */
function checkList(list: unknown[], path: string, ctx: Placeholders): unknown[] {
  if (list.length > LIST_ITEMS_MAX) {
    throw new ApiError('InvalidPropertyValueError', `Lists may hold at most ${LIST_ITEMS_MAX} items ("${path}").`);
  }
  let kind: string | null = null;
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (item === null) continue;
    const itemKind = typeof item;
    if (itemKind === 'object') {
      throw new ApiError('InvalidPropertyValueError',
        `Lists must hold strings, numbers or booleans, not objects or lists ("${path}").`);
    }
    if (kind !== null && itemKind !== kind) {
      throw new ApiError('InvalidPropertyValueError', `Lists must hold values of one type ("${path}").`);
    }
    kind = itemKind;
    const after = checkValue(item, path, '', 0, ctx);
    if (after !== item) list[i] = after;
  }
  return list;
}

/** Replaces placeholders in place; only changed slots are written (add-on lists repeat per event). */
function replacePlaceholdersDeep(value: unknown, ctx: Placeholders): unknown {
  if (typeof value === 'string') {
    return value === IP_PLACEHOLDER ? ctx.ip : value === UA_PLACEHOLDER ? ctx.userAgent : value;
  }
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const before = value[i];
      const after = replacePlaceholdersDeep(before, ctx);
      if (after !== before) value[i] = after;
    }
    return value;
  }
  const object = value as JsonObject;
  for (const key in object) {
    const before = object[key];
    const after = replacePlaceholdersDeep(before, ctx);
    if (after !== before) object[key] = after;
  }
  return object;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
