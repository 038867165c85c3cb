/**
 * A batch body's common case, read straight from its bytes into leaves: no JSON.parse, no event
 * objects, no flatten. It takes only bodies whose every event is plain: properties with ASCII
 * names that need no escape, values that are strings, numbers, booleans, null, nested objects and
 * lists, and an `svc` object that holds at most a `timestamp`. For such a body it gives exactly the
 * leaves, timestamps and sizes that parseBatchBody → EventPreparer → flattenEvent give (the tests
 * compare both on generated and mutated bodies). Anything else, from a `\u` in a name to a
 * duplicate key, an add-on list or invalid JSON, returns null, and the caller takes that path, so
 * every refusal, message and rarity stays with the one code that has them.
 *
 * At ~200 bytes an event, JSON.parse alone was ~2.4 µs of the write path's ~8.4 µs of CPU an event.
 */
import { leavesBytes } from './event-preparer.js';
import type { WriteContext } from './event-preparer.js';
import { bytesUnder, type Fragment } from '../schema/fragment.js';
import type { Enricher } from '../enrich/pipeline.js';
import {
  ADDON_LIST_BYTES_MAX, ADDON_PLANS_KEPT, BATCH_EVENTS_MAX, EVENT_BYTES_MAX, EVENT_DEPTH_MAX, LIST_ITEMS_MAX, NUMBER_MAX,
  NUMBER_MIN, PROPERTY_NAME_CHARS_MAX, STRING_VALUE_CHARS_MAX, SVC_OVERHEAD_BYTES,
} from '../base/limits.js';
import { PathJoiner, type Leaves } from '../schema/flatten.js';
import { formatTimestamp, parseCanonicalBytes, parseTimestamp } from '../schema/timestamp.js';
import { TIMESTAMP_INPUT, planAddons, type AddonPlan } from './addon-plan.js';

/** A batch read by prepareBatchFast: its events' leaves are in the Leaves it was given. */
export interface FastBatch {
  /** Collection names in body order, each with its number of events. */
  readonly collections: [string, number][];
  readonly events: number;
  /** Per event: svc.timestamp in ms. */
  readonly timestamps: Float64Array;
  /** Per event: its leaves' from and to (RANGE_FIELDS = 2). */
  readonly ranges: Int32Array;
  readonly tooLarge: Uint8Array;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const DOT = 0x2e;
const MINUS = 0x2d;
const PLUS = 0x2b;
const ZERO = 0x30;
const NINE = 0x39;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_LIST = 0x5b;
const CLOSE_LIST = 0x5d;

const IP_PLACEHOLDER = '${svc.ip}';
const UA_PLACEHOLDER = '${svc.user_agent}';
/**
 * An event whose JSON spans at most this many bytes cannot pass the size limit: its leaves count
 * at most ~span²/2 + 3·span bytes (each leaf's path and value lie within the span).
 */
const SMALL_EVENT_BYTES = 1_024;
/** Literals this long may be outside the exact range (exact-numbers.ts): the slow path judges. */
const LONG_LITERAL_CHARS = 19;
/** Integers of at most this many digits are read exactly digit by digit. */
const EXACT_DIGITS = 15;

const POWERS_OF_TEN = Array.from({ length: EXACT_DIGITS + 1 }, (_, i) => 10 ** i);

/** Thrown inside the reader when the body leaves the fast path; never escapes prepareBatchFast. */
const BAIL = new Error('not a fast-path body');

/** A slot of the path cache: the path `parent.key` and its own id for its children. */
interface PathSlot {
  readonly parent: number;
  readonly key: string;
  readonly path: string;
  readonly id: number;
  /** The last short list read at this path, as sent, and that list (frozen: every reader shares it). */
  listBytes: Buffer | null;
  list: readonly unknown[] | null;
}

const PATH_SLOTS = 4_096;
/** Lists this long (as sent) at most are kept to be given again (FastBatchReader.sharedList). */
const SHARED_LIST_BYTES_MAX = 64;

const TIMESTAMP = 'timestamp';
const ADDONS = 'addons';
const ADDONS_LEAF = 'svc.addons.'; // structural (flatten.ts): the list's JSON text
const NO_BYTES = new Uint8Array(0);
const NO_TEXT = Buffer.alloc(0);

/** Reads batch bodies on one thread; keeps its path and value caches from body to body. */
export class FastBatchReader {
  private bytes: Uint8Array = NO_BYTES;
  private text: Buffer = NO_TEXT;
  private at = 0;
  private leaves!: Leaves;
  private ctx!: WriteContext;
  private readonly paths: (PathSlot | undefined)[] = new Array(PATH_SLOTS);
  private nextPathId = 1;
  /** Keys of the objects being read, innermost last; `keysFrom` marks where each object's start. */
  private readonly keys: string[] = [];
  /** A placeholder was replaced in the event being read: its size no longer follows from its span. */
  private replaced = false;
  /** The add-on plan of the event being read, or null. */
  private plan: AddonPlan | null = null;
  /** Lists planned lately, as sent, with their plans (null: the general path reads it). */
  private readonly plans: { bytes: Buffer; plan: AddonPlan | null }[] = [];
  /** The event's add-on results and their output names, while it is enriched. */
  private readonly results: Fragment[] = [];
  private readonly outputs: string[] = [];
  /** What the results of the event being read add to its leaves (bytesUnder). */
  private resultBytes = 0;
  /** Leaves the results given so far stand for beyond their one each: the encoded leaves' index. */
  private hidden = 0;
  private readonly joiner = new PathJoiner();
  /** The last svc.timestamp formatted for an add-on input, and its ms. */
  private stampMs = NaN;
  private stamp = '';

  /**
   * With an enricher, events whose `svc.addons` list has a plan are read too: add-ons run on the
   * values read and each cached result is appended as one leaf whose value is the result
   * (isFragment), standing for the leaves the general path appends. LeafEncoder writes those.
   */
  constructor(private readonly enricher: Pick<Enricher, 'inputKeys' | 'result'> | null = null) {}

  /**
   * The body's events as leaves appended to `leaves` (from 0), or null: take the general path.
   * The ranges index the leaves as encoded, where each add-on result leaf is its leaves.
   */
  read(body: Uint8Array, ctx: WriteContext, now: number, leaves: Leaves): FastBatch | null {
    // Always a plain Uint8Array (a Buffer is a subclass): one shape for every byte read below.
    this.bytes = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
    this.text = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    this.at = 0;
    this.hidden = 0;
    this.leaves = leaves;
    this.ctx = ctx;
    leaves.start = 0;
    leaves.count = 0;
    try {
      return this.batch(now);
    } catch (error) {
      if (error !== BAIL) throw error;
      return null;
    } finally {
      this.keys.length = 0;
      this.bytes = NO_BYTES;
      this.text = NO_TEXT;
    }
  }

  private batch(now: number): FastBatch {
    const collections: [string, number][] = [];
    let capacity = 256;
    let t = new Float64Array(capacity);
    let ranges = new Int32Array(2 * capacity);
    let tooLarge = new Uint8Array(capacity);
    let events = 0;
    this.expect(OPEN_OBJECT);
    if (this.peek() === CLOSE_OBJECT) this.at++;
    else {
      for (;;) {
        const name = this.collectionName();
        for (const [seen] of collections) if (seen === name) throw BAIL; // JSON.parse keeps the last
        this.expect(COLON);
        this.expect(OPEN_LIST);
        let count = 0;
        if (this.peek() === CLOSE_LIST) this.at++;
        else {
          for (;;) {
            if (events === BATCH_EVENTS_MAX) throw BAIL;
            if (events === capacity) {
              capacity *= 2;
              t = grow(t, capacity);
              ranges = grow(ranges, 2 * capacity);
              tooLarge = grow(tooLarge, capacity);
            }
            const start = this.at;
            const from = this.leaves.count;
            // Ranges count each result's leaves, as the encoded leaves give them (LeafEncoder).
            ranges[2 * events] = from + this.hidden;
            this.replaced = false;
            this.plan = null;
            this.resultBytes = 0;
            t[events] = this.event(now);
            ranges[2 * events + 1] = this.leaves.count + this.hidden;
            if (this.mayBeTooLarge(this.at - start) &&
              leavesBytes(this.leaves, from, this.leaves.count) > EVENT_BYTES_MAX + SVC_OVERHEAD_BYTES) tooLarge[events] = 1;
            events++;
            count++;
            if (this.peek() === COMMA) this.at++;
            else {
              this.expect(CLOSE_LIST);
              break;
            }
          }
        }
        collections.push([name, count]);
        if (this.peek() === COMMA) this.at++;
        else {
          this.expect(CLOSE_OBJECT);
          break;
        }
      }
    }
    this.skipSpace();
    if (this.at !== this.bytes.length) throw BAIL;
    return { collections, events, timestamps: t.subarray(0, events), ranges: ranges.subarray(0, 2 * events), tooLarge: tooLarge.subarray(0, events) };
  }

  /**
   * Whether the event just read, whose JSON spans `span` bytes, may pass the size limit, so its
   * leaves must be measured. A small span bounds its own leaves (SMALL_EVENT_BYTES); its add-on
   * results add exactly resultBytes.
   */
  private mayBeTooLarge(span: number): boolean {
    if (this.replaced || span > SMALL_EVENT_BYTES) return true;
    return this.plan !== null && span * span / 2 + 3 * span + this.resultBytes > EVENT_BYTES_MAX + SVC_OVERHEAD_BYTES;
  }

  /** One event; returns its svc.timestamp in ms. */
  private event(now: number): number {
    this.expect(OPEN_OBJECT);
    this.leaves.start = this.leaves.count;
    let t = now;
    let svc = false;
    const keysFrom = this.keys.length;
    if (this.peek() === CLOSE_OBJECT) {
      this.at++;
      return t;
    }
    for (;;) {
      const keyStart = this.nameStart();
      const keyEnd = this.nameEnd(keyStart);
      if (keyEnd - keyStart === 3 && this.bytes[keyStart] === 0x73 && this.bytes[keyStart + 1] === 0x76 &&
        this.bytes[keyStart + 2] === 0x63) { // "svc"
        if (svc) throw BAIL;
        svc = true;
        this.expect(COLON);
        t = this.svc(now);
      } else {
        const slot = this.path(0, '', keyStart, keyEnd);
        this.unique(slot.path, keysFrom);
        this.expect(COLON);
        this.value(slot, 1);
      }
      if (this.peek() === COMMA) this.at++;
      else {
        this.expect(CLOSE_OBJECT);
        break;
      }
    }
    if (this.plan !== null && this.plan.steps.length > 0) this.enrich(this.plan, keysFrom, t);
    this.keys.length = keysFrom;
    return t;
  }

  /**
   * `svc` as the fast path takes it: {}, or a `timestamp` (text or null) and, with an enricher, an
   * `addons` list that has a plan, each at most once and in either order.
   */
  private svc(now: number): number {
    this.expect(OPEN_OBJECT);
    let t = now;
    let timestamp = false;
    if (this.peek() === CLOSE_OBJECT) {
      this.at++;
      return t;
    }
    for (;;) {
      const keyStart = this.nameStart();
      const keyEnd = this.nameEnd(keyStart);
      this.expect(COLON);
      if (!timestamp && sameAscii(TIMESTAMP, this.bytes, keyStart, keyEnd)) {
        timestamp = true;
        t = this.timestamp(now);
      } else if (this.plan === null && this.enricher !== null && sameAscii(ADDONS, this.bytes, keyStart, keyEnd)) {
        this.plan = this.addons();
        const leaves = this.leaves;
        leaves.paths[leaves.count] = ADDONS_LEAF;
        leaves.values[leaves.count] = this.plan.text;
        leaves.count++;
      } else throw BAIL;
      if (this.peek() === COMMA) this.at++;
      else {
        this.expect(CLOSE_OBJECT);
        return t;
      }
    }
  }

  /** The add-on list at `at`, planned, from the plans kept when it is there. */
  private addons(): AddonPlan {
    if (this.peek() !== OPEN_LIST) throw BAIL;
    const start = this.at;
    const text = this.text;
    for (const kept of this.plans) {
      const end = start + kept.bytes.length;
      if (end <= text.length && kept.bytes.compare(text, start, end) === 0) {
        if (kept.plan === null) throw BAIL;
        this.at = end;
        return kept.plan;
      }
    }
    this.skipValue();
    if (this.at - start > ADDON_LIST_BYTES_MAX) throw BAIL; // kept below: bounded
    const plan = planAddons(text.toString('utf8', start, this.at), this.enricher!);
    if (this.plans.length === ADDON_PLANS_KEPT) this.plans.pop();
    this.plans.unshift({ bytes: Buffer.from(text.subarray(start, this.at)), plan });
    if (plan === null) throw BAIL;
    return plan;
  }

  /**
   * Runs the plan's add-ons on the event just read (its top-level names are keys[keysFrom..]) and
   * appends their results' leaves, as EventPreparer does with the general path's Appended.
   */
  private enrich(plan: AddonPlan, keysFrom: number, t: number): void {
    const leaves = this.leaves;
    const from = leaves.start;
    const own = leaves.count;
    const { keys, results, outputs } = this;
    let r = 0;
    for (const step of plan.steps) {
      for (let i = keysFrom; i < keys.length; i++) if (keys[i] === step.output) throw BAIL;
      const inputs = step.values;
      for (let k = 0; k < inputs.length; k++) {
        const path = step.inputs[k];
        if (path === TIMESTAMP_INPUT) {
          inputs[k] = this.timestampText(t);
          continue;
        }
        // Events of a batch mostly list their properties in one order: try where it was last.
        let at = from + step.offsets[k];
        if (at >= own || leaves.paths[at] !== path) {
          at = from;
          while (at < own && leaves.paths[at] !== path) at++;
          if (at === own) throw BAIL;
          step.offsets[k] = at - from;
        }
        if (Array.isArray(leaves.values[at])) throw BAIL;
        inputs[k] = leaves.values[at];
      }
      results[r] = this.enricher!.result(step.name, inputs);
      outputs[r++] = step.output;
    }
    // Each result as one leaf standing for its leaves (LeafEncoder writes them once per record),
    // after the event's own leaves as the general path appends them; inputs were read above.
    for (let i = 0; i < r; i++) {
      const fragment = results[i];
      leaves.paths[leaves.count] = outputs[i];
      leaves.values[leaves.count++] = fragment;
      this.hidden += fragment.leafPaths.length - 1;
      this.resultBytes += bytesUnder(fragment, outputs[i]);
    }
    leaves.start = from;
  }

  /** svc.timestamp's text as prepare.ts gives it to add-ons. */
  private timestampText(t: number): string {
    if (t !== this.stampMs) {
      this.stampMs = t;
      this.stamp = formatTimestamp(t);
    }
    return this.stamp;
  }

  /** A JSON value from `at` (its first byte), skipped; whether it is valid JSON is for its reader. */
  private skipValue(): void {
    const bytes = this.bytes;
    let at = this.at;
    let depth = 0;
    for (;;) {
      const byte = bytes[at];
      if (byte === undefined) throw BAIL;
      if (byte === QUOTE) {
        at++;
        while (bytes[at] !== QUOTE) {
          if (bytes[at] === undefined) throw BAIL;
          at += bytes[at] === BACKSLASH ? 2 : 1;
        }
      } else if (byte === OPEN_LIST || byte === OPEN_OBJECT) depth++;
      else if (byte === CLOSE_LIST || byte === CLOSE_OBJECT) depth--;
      at++;
      if (depth <= 0) break;
    }
    this.at = at;
  }

  /** svc.timestamp's value: text or null. */
  private timestamp(now: number): number {
    let t = now;
    const first = this.peek();
    if (first === QUOTE) {
      const start = this.at + 1;
      // The canonical form is read where it lies; any other text as parseTimestamp reads it.
      t = this.bytes[start + 24] === QUOTE ? parseCanonicalBytes(this.bytes, start) : NaN;
      if (t === t) this.at = start + 25;
      else t = parseTimestamp(this.string());
      if (Number.isNaN(t)) throw BAIL;
    } else if (first === 0x6e) this.literal('null');
    else throw BAIL;
    return t;
  }

  /** The value at `slot.path`, `depth` levels down (top-level values are at depth 1, as prepare.ts counts). */
  private value(slot: PathSlot, depth: number): void {
    const first = this.peek();
    const leaves = this.leaves;
    let value: unknown;
    if (first === QUOTE) value = this.checkedString();
    else if (first === OPEN_OBJECT) {
      if (depth >= EVENT_DEPTH_MAX) throw BAIL;
      this.object(slot, depth);
      return;
    } else if (first === OPEN_LIST) {
      if (depth >= EVENT_DEPTH_MAX) throw BAIL;
      value = this.sharedList(slot);
    } else value = this.primitive(first);
    leaves.paths[leaves.count] = slot.path;
    leaves.values[leaves.count] = value;
    leaves.count++;
  }

  private object(parent: PathSlot, depth: number): void {
    this.at++;
    if (this.peek() === CLOSE_OBJECT) {
      this.at++;
      const leaves = this.leaves;
      leaves.paths[leaves.count] = `${parent.path}.`; // a structural leaf (flatten.ts)
      leaves.values[leaves.count] = '{}';
      leaves.count++;
      return;
    }
    const keysFrom = this.keys.length;
    for (;;) {
      const keyStart = this.nameStart();
      const keyEnd = this.nameEnd(keyStart);
      const slot = this.path(parent.id, parent.path, keyStart, keyEnd);
      this.unique(slot.path, keysFrom);
      this.expect(COLON);
      this.value(slot, depth + 1);
      if (this.peek() === COMMA) this.at++;
      else {
        this.expect(CLOSE_OBJECT);
        break;
      }
    }
    this.keys.length = keysFrom;
  }

  /**
   * A list, given as the same frozen array as the last one read at this path when its text is the
   * same: events repeat short lists, and the leaf encoder then writes them with no JSON.stringify.
   */
  private sharedList(slot: PathSlot): readonly unknown[] {
    const start = this.at;
    const last = slot.listBytes;
    if (last !== null) {
      const end = start + last.length;
      if (end <= this.text.length && last.compare(this.text, start, end) === 0) {
        this.at = end;
        return slot.list!;
      }
    }
    const replaced = this.replaced;
    this.replaced = false;
    const list = this.list();
    // A replaced placeholder is the request's own value: such a list is not kept.
    if (!this.replaced && this.at - start <= SHARED_LIST_BYTES_MAX) {
      slot.listBytes = Buffer.from(this.text.subarray(start, this.at));
      slot.list = Object.freeze(list);
    }
    this.replaced ||= replaced;
    return list;
  }

  /** A list of primitives of one type (nulls among them), as prepare.ts allows. */
  private list(): unknown[] {
    this.at++;
    const list: unknown[] = [];
    if (this.peek() === CLOSE_LIST) {
      this.at++;
      return list;
    }
    let kind = '';
    for (;;) {
      const first = this.peek();
      if (first === OPEN_OBJECT || first === OPEN_LIST) throw BAIL;
      const item = first === QUOTE ? this.checkedString() : this.primitive(first);
      if (item !== null) {
        const itemKind = typeof item;
        if (kind !== '' && itemKind !== kind) throw BAIL;
        kind = itemKind;
      }
      list.push(item);
      if (list.length > LIST_ITEMS_MAX) throw BAIL;
      if (this.peek() === COMMA) this.at++;
      else {
        this.expect(CLOSE_LIST);
        return list;
      }
    }
  }

  /** A number, true, false or null. */
  private primitive(first: number | undefined): number | boolean | null {
    if (first === 0x74) return this.literal('true'), true;
    if (first === 0x66) return this.literal('false'), false;
    if (first === 0x6e) return this.literal('null'), null;
    return this.number();
  }

  private literal(word: string): void {
    const bytes = this.bytes;
    for (let i = 0; i < word.length; i++) if (bytes[this.at + i] !== word.charCodeAt(i)) throw BAIL;
    this.at += word.length;
  }

  /** A JSON number literal, checked against the seed's range as prepare.ts checks it. */
  private number(): number {
    const bytes = this.bytes;
    const start = this.at;
    let at = start;
    const negative = bytes[at] === MINUS;
    if (negative) at++;
    let digit = bytes[at] - ZERO;
    if (!(digit >= 0 && digit <= 9)) throw BAIL;
    let whole = 0;
    const digitsFrom = at;
    if (digit === 0) at++;
    else {
      while (digit >= 0 && digit <= 9) {
        whole = whole * 10 + digit;
        digit = bytes[++at] - ZERO;
      }
    }
    let fraction = 0;
    if (bytes[at] === DOT) {
      const fractionFrom = at + 1;
      digit = bytes[++at] - ZERO;
      if (!(digit >= 0 && digit <= 9)) throw BAIL;
      while (digit >= 0 && digit <= 9) {
        whole = whole * 10 + digit;
        digit = bytes[++at] - ZERO;
      }
      fraction = at - fractionFrom;
    }
    // Up to 15 significant digits, m / 10^k is the correctly rounded double (both are exact), as
    // Number() gives; past that, or with an exponent, Number() reads the literal.
    let exact = at - digitsFrom - (fraction > 0 ? 1 : 0) <= EXACT_DIGITS;
    const e = bytes[at];
    if (e === 0x65 || e === 0x45) {
      exact = false;
      at++;
      if (bytes[at] === PLUS || bytes[at] === MINUS) at++;
      at = this.digits(at);
    }
    if (at - start >= LONG_LITERAL_CHARS) throw BAIL;
    this.at = at;
    const magnitude = exact ? (fraction === 0 ? whole : whole / POWERS_OF_TEN[fraction]) : 0;
    const value = exact ? (negative ? -magnitude : magnitude) : Number(latin1(this.text, start, at));
    if (!Number.isFinite(value) || value < NUMBER_MIN || value > NUMBER_MAX) throw BAIL;
    return value;
  }

  /** One or more digits from `at`; returns the index after them. */
  private digits(at: number): number {
    const bytes = this.bytes;
    if (!(bytes[at] >= ZERO && bytes[at] <= NINE)) throw BAIL;
    do at++; while (bytes[at] >= ZERO && bytes[at] <= NINE);
    return at;
  }

  /** A string value with its placeholder replaced and its length checked (prepare.ts checkString). */
  private checkedString(): string {
    const value = this.string();
    if (value.length > STRING_VALUE_CHARS_MAX) throw BAIL;
    if (value === IP_PLACEHOLDER) {
      this.replaced = true;
      return this.ctx.ip;
    }
    if (value === UA_PLACEHOLDER) {
      this.replaced = true;
      return this.ctx.userAgent;
    }
    return value;
  }

  /** A JSON string at `at` (its opening quote), decoded as JSON.parse of the body's UTF-8 text would. */
  private string(): string {
    const bytes = this.bytes;
    const start = this.at + 1;
    let at = start;
    let plain = true;
    let ascii = true;
    for (;;) {
      const byte = bytes[at];
      if (byte === QUOTE) break;
      if (byte === undefined || byte < 0x20) throw BAIL;
      if (byte === BACKSLASH) {
        plain = false;
        at += 2;
        continue;
      }
      if (byte >= 0x80) ascii = false;
      at++;
    }
    this.at = at + 1;
    if (!plain) {
      try {
        return JSON.parse(this.text.toString('utf8', start - 1, at + 1)) as string;
      } catch {
        throw BAIL;
      }
    }
    if (!ascii) return this.text.toString('utf8', start, at);
    return latin1(this.text, start, at);
  }

  /** The collection name at `at`: the fast path takes the ones a property name could be. */
  private collectionName(): string {
    const start = this.nameStart();
    const end = this.nameEnd(start);
    return latin1(this.text, start, end);
  }

  /** Skips space and the opening quote of a name; returns where its text starts. */
  private nameStart(): number {
    this.expect(QUOTE);
    return this.at;
  }

  /**
   * Where the name that starts at `start` ends, past its closing quote afterwards. The fast path
   * takes names of printable ASCII with no escape, no '.', not empty and not leading with a digit
   * (objects list names like "7" first); anything else, refused or not, goes the general way.
   */
  private nameEnd(start: number): number {
    const bytes = this.bytes;
    let at = start;
    for (;;) {
      const byte = bytes[at];
      if (byte === QUOTE) break;
      if (byte === undefined || byte < 0x20 || byte >= 0x80 || byte === BACKSLASH || byte === DOT) throw BAIL;
      at++;
    }
    const length = at - start;
    if (length === 0 || length > PROPERTY_NAME_CHARS_MAX || (bytes[start] >= ZERO && bytes[start] <= NINE)) throw BAIL;
    this.at = at + 1;
    return at;
  }

  /** The slot of path `parentPath.key` (or `key` at the top), from the cache when it is there. */
  private path(parent: number, parentPath: string, start: number, end: number): PathSlot {
    const bytes = this.bytes;
    let hash = Math.imul(0x811c9dc5 ^ parent, 0x01000193);
    for (let at = start; at < end; at++) hash = Math.imul(hash ^ bytes[at], 0x01000193);
    const index = (hash >>> 0) & (PATH_SLOTS - 1);
    const slot = this.paths[index];
    if (slot !== undefined && slot.parent === parent && sameAscii(slot.key, bytes, start, end)) return slot;
    const key = latin1(this.text, start, end);
    // prepare.ts writes a replaced placeholder back with `object[key] =`, which for this one name
    // sets the prototype instead: the general path keeps that behaviour.
    if (key === '__proto__') throw BAIL;
    const fresh: PathSlot = {
      parent, key, path: parent === 0 ? key : `${parentPath}.${key}`, id: this.nextPathId++, listBytes: null, list: null,
    };
    this.paths[index] = fresh;
    return fresh;
  }

  /** Refuses a name the object being read (its keys from `from`) already has: JSON.parse keeps the last. */
  private unique(path: string, from: number): void {
    const keys = this.keys;
    for (let i = from; i < keys.length; i++) if (keys[i] === path) throw BAIL;
    keys.push(path);
  }

  private skipSpace(): void {
    const bytes = this.bytes;
    let at = this.at;
    for (;;) {
      const byte = bytes[at];
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break;
      at++;
    }
    this.at = at;
  }

  /** The next byte after space (not consumed). */
  private peek(): number | undefined {
    this.skipSpace();
    return this.bytes[this.at];
  }

  private expect(byte: number): void {
    if (this.peek() !== byte) throw BAIL;
    this.at++;
  }
}

/** Buffer's latin1Slice (what toString('latin1') ends in, without its argument checks): ASCII here. */
function latin1(text: Buffer, start: number, end: number): string {
  return (text as unknown as { latin1Slice(start: number, end: number): string }).latin1Slice(start, end);
}

function sameAscii(text: string, bytes: Uint8Array, start: number, end: number): boolean {
  if (text.length !== end - start) return false;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) !== bytes[start + i]) return false;
  return true;
}

function grow<T extends Float64Array | Int32Array | Uint8Array>(array: T, length: number): T {
  const bigger = new (array.constructor as new (length: number) => T)(length);
  bigger.set(array);
  return bigger;
}
