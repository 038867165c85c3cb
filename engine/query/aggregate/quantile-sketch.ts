/**
 * A mergeable quantile sketch with relative error guarantees (DDSketch, Masson et al. 2019):
 * logarithmic buckets of ratio gamma for positive and negative values plus a zero count, so
 * any quantile estimate is within RELATIVE_ACCURACY of a true value. Used by median/percentile
 * once the exact value budget is spent.
 */

/** Relative accuracy of an estimate: 0.5%. */
export const RELATIVE_ACCURACY = 0.005;
const GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY);
const INV_LOG_GAMMA = 1 / Math.log(GAMMA);
/** Magnitudes below this count as zero; bounds the key range. */
const MIN_MAGNITUDE = 1e-9;

/** Counts per integer key in a dense window [offset, offset + counts.length). */
class KeyCounts {
  counts = new Float64Array(0);
  offset = 0;

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

  add(x: number): void {
    this.count++;
    if (x > MIN_MAGNITUDE) this.positive.add(Math.ceil(Math.log(x) * INV_LOG_GAMMA), 1);
    else if (x < -MIN_MAGNITUDE) this.negative.add(Math.ceil(Math.log(-x) * INV_LOG_GAMMA), 1);
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

/** The representative value of a key: the middle of its bucket in relative terms. */
function valueOf(key: number): number {
  return (2 * Math.pow(GAMMA, key)) / (GAMMA + 1);
}
