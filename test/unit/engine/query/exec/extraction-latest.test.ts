/**
 * extraction with `latest` over real segment files: a segment read whole skips the blocks of rows
 * whose greatest time cannot be among the newest (extraction.ts collectNewest). Whatever the order
 * of the times in a segment (time order, random, reversed, few distinct times), the answer is
 * the reference's: the newest N by time, ties broken by log order, the oldest first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { blockMaxima, type ScanSource, type SegmentRef } from '../../../../../engine/storage/chunk.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { QueryService } from '../../../../../engine/query/exec/service.js';
import { makeChunk, random, randomEvents, rawJson, type TestEvent } from '../../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 2, 1);
const DAY = 86_400_000;
const timeframe = { start: '2024-03-01T00:00:00.000Z', end: '2024-03-04T00:00:00.000Z' };
/** Rows a segment holds: several of the 4,096-row blocks, the last one partial. */
const ROWS = 11_000;
const SEGMENTS = 3;

type Order = 'time' | 'random' | 'reversed' | 'few times';

/** Segment `s`'s times in `order`: segments overlap in time, so the newest rows are spread. */
function times(order: Order, s: number, rnd: () => number): number[] {
  const from = START + s * (DAY / 2);
  const span = 2 * DAY;
  const sorted = Array.from({ length: ROWS }, () => from + Math.floor(rnd() * span)).sort((a, b) => a - b);
  if (order === 'time') return sorted;
  if (order === 'reversed') return sorted.reverse();
  if (order === 'few times') return sorted.map(() => START + 2 * DAY + Math.floor(rnd() * 3) * 3_600_000);
  return sorted.map(() => from + Math.floor(rnd() * span));
}

/** The segments (and a write buffer of 500 older events) of one order, with every event and its seq. */
function store(order: Order, seed: number): { source: ScanSource; stored: { event: TestEvent; seq: number }[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-latest-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rnd = random(seed);
  const stored: { event: TestEvent; seq: number }[] = [];
  const segments: SegmentRef[] = [];
  for (let s = 0; s < SEGMENTS; s++) {
    const events = randomEvents(seed + s, ROWS, START, DAY);
    times(order, s, rnd).forEach((ts, i) => { events[i] = { ...events[i], ts }; });
    const file = path.join(dir, `${s}.arrow`);
    segments.push({ file, footer: writeSegment(file, makeChunk(events, s * 100_000), {}) });
    events.forEach((event, i) => stored.push({ event, seq: s * 100_000 + i }));
  }
  const buffered = randomEvents(seed + 99, 500, START, DAY);
  buffered.forEach((event, i) => stored.push({ event, seq: 900_000 + i }));
  return {
    source: { idKey: 0, memoryVersion: 0, segments, memory: makeChunk(buffered, 900_000), schema: {} },
    stored,
  };
}

for (const order of ['time', 'random', 'reversed', 'few times'] as const) {
  t.test(`latest N of segments whose times are in ${order} order`, async (t) => {
    const { source, stored } = store(order, order.length * 7);
    const service = new QueryService({ source: () => source, clock: () => START + 4 * DAY, workers: 0 });
    t.teardown(() => service.close());
    for (const ref of source.segments) {
      const chunk = readSegment(ref.file, []);
      t.same(chunk.tsBlockMaxima, blockMaxima(chunk.ts, chunk.rows), 'a segment read keeps its blocks\' greatest times');
    }
    const want = stored.sort((a, b) => a.event.ts - b.event.ts || a.seq - b.seq).map(({ event, seq }) => rawJson(event, seq));
    const wantIds = want.map((json) => (JSON.parse(json) as { svc: { id: string } }).svc.id);
    for (const n of [1, 100, 4_097, 20_000]) {
      for (const state of ['segments read', 'segments cached']) {
        const got = await service.run('p', 'extraction', { event_collection: 'e', timeframe, latest: n }) as { result: { svc: { id: string } }[] };
        t.same(got.result.map((event) => event.svc.id), wantIds.slice(-n), `latest ${n}, ${state}: the events`);
        // Each event whole, for the smaller answers (the ids above name the rest's rows).
        if (n <= 100) t.same(got.result, want.slice(-n).map((json) => JSON.parse(json)), `latest ${n}, ${state}: as stored`);
      }
    }
  });
}
