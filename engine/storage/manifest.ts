/**
 * The manifest: the one file that says which segments exist, how far each collection's log has
 * been flushed, and each collection's schema. Rewritten atomically after every flush; its rename
 * is the commit point of a flush (segments not named here are orphans and are removed at open).
 */
import path from 'node:path';
import type { SchemaType, SegmentFooter } from './chunk.js';
import { readJsonIfExists, writeFileDurable } from './files.js';

export interface ManifestSegment {
  /** Path relative to the data dir. */
  readonly file: string;
  readonly footer: SegmentFooter;
}

export interface ManifestCollection {
  readonly project: string;
  readonly collection: string;
  /** Directory relative to the data dir. */
  readonly dir: string;
  /** Rows with seq below this are in segments. */
  readonly flushedSeq: number;
  readonly nextSeq: number;
  readonly schema: Readonly<Record<string, SchemaType>>;
  readonly segments: readonly ManifestSegment[];
}

export interface Manifest {
  readonly version: 1;
  readonly collections: readonly ManifestCollection[];
}

const FILE = 'manifest.json';

export function readManifest(dataDir: string): Manifest {
  return readJsonIfExists<Manifest>(path.join(dataDir, FILE)) ?? { version: 1, collections: [] };
}

export function writeManifest(dataDir: string, manifest: Manifest): void {
  writeFileDurable(path.join(dataDir, FILE), JSON.stringify(manifest));
}
