/**
 * Segment footers with their sketches, kept under a byte budget, least recently used evicted
 * first (chunk-cache.ts reads them through this). A footer is small beside its segment's columns,
 * and every share of a distinct count looks at every segment's (footer-sketch.ts).
 */
import type { FooterWithSketches } from '../../storage/segment/footer.js';

export class FooterCache {
  /** Least recently used first. */
  private readonly footers = new Map<string, { footer: FooterWithSketches; bytes: number }>();
  private bytes = 0;

  constructor(private readonly readFooter: (file: string) => FooterWithSketches, private readonly budgetBytes: number) {}

  /** The segment's footer, read from its sidecar on first use. */
  get(file: string): FooterWithSketches {
    const hit = this.footers.get(file);
    if (hit) {
      this.footers.delete(file);
      this.footers.set(file, hit);
      return hit.footer;
    }
    const footer = this.readFooter(file);
    // The sketches as they will be once decoded (a footer decodes them when first asked; it keeps
    // no pair table: footer.ts).
    let bytes = 1024 + footer.sketchBytes;
    for (const { values } of Object.values(footer.values)) {
      for (const value of values) bytes += typeof value === 'string' ? 32 + 2 * value.length : 32;
    }
    this.footers.set(file, { footer, bytes });
    this.bytes += bytes;
    for (const [kept, entry] of this.footers) {
      if (this.bytes <= this.budgetBytes || kept === file) break;
      this.footers.delete(kept);
      this.bytes -= entry.bytes;
    }
    return footer;
  }

  /** Reads the footer before a query asks, only while the budget has room (it never evicts one a query read). */
  warm(file: string): 'warmed' | 'cached' | 'full' {
    if (this.footers.has(file)) return 'cached';
    if (this.bytes >= this.budgetBytes) return 'full';
    this.get(file);
    return 'warmed';
  }

  forget(file: string): void {
    const entry = this.footers.get(file);
    if (entry === undefined) return;
    this.footers.delete(file);
    this.bytes -= entry.bytes;
  }
}
