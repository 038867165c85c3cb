/**
 * eq / in / ne / not_in, contains / not_contains / starts_with and exists over a segment's
 * dictionary as stored (padded ids, and strings with offsets): the rows the naive reference
 * selects, found without making the dictionary's strings.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ColumnViews } from '../../../../../engine/query/eval/columns.js';
import { compileFilters, Scratch } from '../../../../../engine/query/eval/filter-eval.js';
import { identityOf } from '../../../../../engine/query/exec/scan.js';
import { parseFilters } from '../../../../../engine/query/plan/filter.js';
import { SegmentColumn } from '../../../../../engine/storage/segment/decode-column.js';
import { readSegment } from '../../../../../engine/storage/segment/reader.js';
import { writeSegment } from '../../../../../engine/storage/segment/writer.js';
import { matches } from '../../../../helpers/query/reference.js';
import { makeChunk, random, type TestEvent } from '../../../../helpers/query/test-support.js';

const START = Date.UTC(2024, 4, 1);
const IDS = 1200;
const STRINGS = ['', 'a', 'ab', 'abc', 'é', 'naïve café', '😀 x', '日本語', 'x'.repeat(300), 'u12'];

function segment(): { events: TestEvent[]; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-stored-match-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const rnd = random(17);
  const events: TestEvent[] = Array.from({ length: 4000 }, (_, i) => {
    const r = rnd();
    return {
      ts: START + i * 1000,
      props: {
        // 1,200 ids: a sorted, padded dictionary; some rows null, missing or a number.
        id: r < 0.03 ? null : r < 0.05 ? undefined : r < 0.06 ? 12 : `u${Math.floor(rnd() * IDS)}`,
        // A 300-character value keeps this dictionary unpadded (offsets).
        s: r < 0.05 ? undefined : STRINGS[Math.floor(rnd() * STRINGS.length)],
      },
    };
  });
  const file = path.join(dir, 'ids.arrow');
  writeSegment(file, makeChunk(events), {});
  return { events, file };
}

const { events, file } = segment();

function selected(filters: unknown[]): { rows: number[]; column: (name: string) => SegmentColumn } {
  const chunk = readSegment(file);
  const nodes = parseFilters(filters);
  const dst = new Int32Array(chunk.rows);
  const n = compileFilters(nodes, chunk, new ColumnViews(), new Scratch())(identityOf(chunk.rows), dst, chunk.rows);
  return { rows: [...dst.subarray(0, n)], column: (name) => chunk.columns.get(name) as SegmentColumn };
}

function reference(filters: unknown[]): number[] {
  const nodes = parseFilters(filters);
  return events.flatMap((event, row) => (nodes.every((node) => matches(event, node)) ? [row] : []));
}

t.test('the dictionaries are stored as this test means them', async (t) => {
  const chunk = readSegment(file);
  const id = chunk.columns.get('id') as SegmentColumn;
  const s = chunk.columns.get('s') as SegmentColumn;
  t.ok(id instanceof SegmentColumn && id.padded !== null, 'ids padded');
  t.ok(s instanceof SegmentColumn && s.padded === null && s.utf8 !== null, 'strings with offsets');
});

const LOOKED_UP: [string, unknown][] = [
  ['a present id', 'u77'],
  ['an absent id', 'u99999'],
  ['a prefix of ids that is no id', 'u'],
  ['a longer string than any id', 'u1234567890'],
  ['the empty string', ''],
  ['a one-byte string', 'a'],
  ['accents', 'naïve café'],
  ['an emoji', '😀 x'],
  ['CJK', '日本語'],
  ['a 300-byte string', 'x'.repeat(300)],
  ['a string that is an id in one column and a value in the other', 'u12'],
  ['a present id and a zero byte', 'u7\0'],
  ['a present string and a zero byte', 'a\0'],
];

t.test('eq and ne against each dictionary, strings not made', async (t) => {
  for (const property of ['id', 's']) {
    for (const [what, value] of LOOKED_UP) {
      for (const operator of ['eq', 'ne']) {
        const filters = [{ property_name: property, operator, property_value: value }];
        const { rows, column } = selected(filters);
        t.same(rows, reference(filters), `${property} ${operator} ${what}`);
        t.equal(column(property).decodedBytes, 0, `${property} ${operator} ${what}: no strings made`);
      }
    }
  }
});

t.test('in and not_in with several values, numbers and null among them', async (t) => {
  const lists: unknown[][] = [
    ['u1', 'u2', 'u3'],
    ['u5', 'zz', '', 'é'],
    ['u7', 12, null],
    ['nothing', 'at', 'all'],
    LOOKED_UP.map(([, value]) => value),
  ];
  for (const property of ['id', 's']) {
    for (const list of lists) {
      for (const operator of ['in', 'not_in']) {
        const filters = [{ property_name: property, operator, property_value: list }];
        const { rows, column } = selected(filters);
        t.same(rows, reference(filters), `${property} ${operator} ${JSON.stringify(list).slice(0, 60)}`);
        t.equal(column(property).decodedBytes, 0, `${property} ${operator}: no strings made`);
      }
    }
  }
});

t.test('contains, not_contains and starts_with against each dictionary, strings not made', async (t) => {
  const texts = ['u1', 'u', '7', '', 'a', 'b', 'na', 'ï', 'café', '日', '本語', '😀', ' x', 'x'.repeat(10), 'x'.repeat(301), 'u7\0', '\0'];
  for (const property of ['id', 's']) {
    for (const text of texts) {
      for (const operator of ['contains', 'not_contains', 'starts_with']) {
        const filters = [{ property_name: property, operator, property_value: text }];
        const { rows, column } = selected(filters);
        t.same(rows, reference(filters), `${property} ${operator} ${JSON.stringify(text).slice(0, 20)}`);
        t.equal(column(property).decodedBytes, 0, `${property} ${operator} ${JSON.stringify(text).slice(0, 20)}: no strings made`);
      }
    }
  }
});

t.test('more strings than are looked up one at a time go through their hashes, strings not made', async (t) => {
  const many = [...Array.from({ length: 40 }, (_, i) => `u${i * 7}`), ...LOOKED_UP.map(([, value]) => value as string)];
  for (const property of ['id', 's']) {
    for (const operator of ['in', 'not_in']) {
      const filters = [{ property_name: property, operator, property_value: many }];
      const { rows, column } = selected(filters);
      t.same(rows, reference(filters), `${property} ${operator} ${many.length} values`);
      t.equal(column(property).decodedBytes, 0, `${property} ${operator} ${many.length} values: no strings made`);
    }
  }
});

t.test('a lone surrogate: the strings are compared', async (t) => {
  for (const property of ['id', 's']) {
    const filters = [{ property_name: property, operator: 'in', property_value: ['u7', '\uD800'] }];
    t.same(selected(filters).rows, reference(filters), `${property} in with a lone surrogate`);
  }
  for (const operator of ['contains', 'starts_with']) {
    const filters = [{ property_name: 's', operator, property_value: '\uD83D' }];
    t.same(selected(filters).rows, reference(filters), `s ${operator} a lone surrogate`);
  }
});

t.test('an id no dictionary entry matches selects nothing, combined with other filters too', async (t) => {
  const filters = [{ property_name: 'id', operator: 'eq', property_value: 'u99999' }, { property_name: 's', operator: 'exists', property_value: true }];
  const { rows, column } = selected(filters);
  t.same(rows, []);
  t.equal(column('s').decodedBytes, 0, 'exists reads no strings either');
  const exists = [{ property_name: 's', operator: 'exists', property_value: true }];
  t.same(selected(exists).rows, reference(exists), 'exists alone');
});
