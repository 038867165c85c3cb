/**
 * A mergeable quantile sketch with relative error guarantees, in the manner of DDSketch (Masson
 * et al. 2019) but with log-linear buckets read straight from a double's bits (as HDR histograms
 * do): a bucket is the exponent plus the top MANTISSA_BITS of the mantissa, so its width is at
 * most 2^-7 of its values and its midpoint within 0.4% of any of them. Positive and negative
 * magnitudes are kept apart, plus a zero count. Used by median/percentile past the exact budget.
 */
import { PartialStateError, type StateReader, type StateWriter } from '../eval/state-io.js';

/** Mantissa bits kept per bucket: 2^-7 relative width. */
const MANTISSA_BITS = 7;
/** Bits of a double's high word below the kept ones. */
const DROPPED_BITS = 20 - MANTISSA_BITS;

const scratch = new Float64Array(1);
const words = new Uint32Array(scratch.buffer);

/** The bucket key of a positive magnitude. */
function keyOf(magnitude: number): number {
  scratch[0] = magnitude;
  return words[1] >>> DROPPED_BITS;
}

/** Counts per integer key in a dense window [offset, offset + counts.length). */
class KeyCounts {
  counts = new Float64Array(0);
  offset = 0;

  /** offset: f64, counts: f64[] */
  encode(writer: StateWriter): void {
    writer.f64(this.offset);
    writer.f64Array(this.counts);
  }

  decodeInto(reader: StateReader): void {
    this.offset = reader.f64('sketch key offset');
    if (!Number.isInteger(this.offset)) throw new PartialStateError(`sketch key offset ${this.offset} is not an integer`);
    this.counts = reader.f64Array('sketch bucket counts');
  }

  add(key: number, weight: number): void {
    if (this.counts.length === 0) {
      this.counts = new Float64Array(64);
      this.offset = key - 32;
    }
    let at = key - this.offset;
    if (at < 0 || at >= this.counts.length) {
      const low = Math.min(this.offset, key);
      const high = Math.max(this.offset + this.counts.length, key + 1);
      const width = Math.max(high - low, this.counts.length) * 2;
      const grown = new Float64Array(width);
      const newOffset = low - Math.floor((width - (high - low)) / 2);
      grown.set(this.counts, this.offset - newOffset);
      this.counts = grown;
      this.offset = newOffset;
      at = key - this.offset;
    }
    this.counts[at] += weight;
  }
}

export class QuantileSketch {
  private readonly positive = new KeyCounts();
  private readonly negative = new KeyCounts();
  zero = 0;
  count = 0;

  /** count: f64, zero: f64, positive and negative buckets (KeyCounts). */
  encode(writer: StateWriter): void {
    writer.f64(this.count);
    writer.f64(this.zero);
    this.positive.encode(writer);
    this.negative.encode(writer);
  }

  static decode(reader: StateReader): QuantileSketch {
    const sketch = new QuantileSketch();
    sketch.count = reader.f64('sketch count');
    sketch.zero = reader.f64('sketch zero count');
    sketch.positive.decodeInto(reader);
    sketch.negative.decodeInto(reader);
    return sketch;
  }

  add(x: number): void {
    this.count++;
    if (x > 0) this.positive.add(keyOf(x), 1);
    else if (x < 0) this.negative.add(keyOf(-x), 1);
    else this.zero++;
  }

  merge(other: QuantileSketch): void {
    this.count += other.count;
    this.zero += other.zero;
    for (const [target, source] of [[this.positive, other.positive], [this.negative, other.negative]]) {
      for (let at = 0; at < source.counts.length; at++) {
        if (source.counts[at] > 0) target.add(source.offset + at, source.counts[at]);
      }
    }
  }

  /** The value at quantile q (0..1), or null when empty. */
  quantile(q: number): number | null {
    if (this.count === 0) return null;
    const rank = Math.floor(q * (this.count - 1));
    let seen = 0;
    const neg = this.negative;
    for (let at = neg.counts.length - 1; at >= 0; at--) {
      seen += neg.counts[at];
      if (seen > rank) return -valueOf(neg.offset + at);
    }
    seen += this.zero;
    if (seen > rank) return 0;
    const pos = this.positive;
    for (let at = 0; at < pos.counts.length; at++) {
      seen += pos.counts[at];
      if (seen > rank) return valueOf(pos.offset + at);
    }
    return valueOf(pos.offset + pos.counts.length - 1);
  }
}

/** The representative value of a key: the middle of its bucket. */
function valueOf(key: number): number {
  words[1] = ((key << DROPPED_BITS) | (1 << (DROPPED_BITS - 1))) >>> 0;
  words[0] = 0;
  return scratch[0];
}
