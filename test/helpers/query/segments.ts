/**
 * Real segment files for tests: `count` segments of `rows` events, a day apart, each event's
 * properties from `props(segment, row)`, written in a temporary directory removed at teardown.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import type { SegmentRef } from '../../../engine/storage/chunk.js';
import { writeSegment } from '../../../engine/storage/segment/writer.js';
import { makeChunk, type TestEvent, type Value } from './test-support.js';

const START = Date.UTC(2024, 0, 1);

export function writeDaySegments(
  t: Test, count: number, rows: number, props: (segment: number, row: number) => Record<string, Value>,
): SegmentRef[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-segments-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return Array.from({ length: count }, (_, s) => {
    const events: TestEvent[] = Array.from({ length: rows }, (_, i) => ({ ts: START + s * 86_400_000 + i * 1000, props: props(s, i) }));
    const file = path.join(dir, `${s}.arrow`);
    return { file, footer: writeSegment(file, makeChunk(events, s * rows), {}) };
  });
}
