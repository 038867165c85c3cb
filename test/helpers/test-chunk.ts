/**
 * Test support for segment tests and benches: builds ColumnChunks from plain rows and views a
 * chunk as plain rows again, so round trips compare by meaning (values of rows whose tag does not
 * use a member are unspecified and must not be compared).
 */
import {
  TAG_BOOL,
  TAG_LIST,
  TAG_MISSING,
  TAG_NULL,
  TAG_NUM,
  TAG_STR,
  type Column,
  type ColumnChunk,
  type Primitive,
} from '../../engine/storage/chunk.js';

/** A property value of a test row; undefined means the path is missing on that row. */
export type TestValue = Primitive | readonly Primitive[] | undefined;

export interface TestRow {
  readonly ts: number;
  readonly props: Readonly<Record<string, TestValue>>;
}

export function buildChunk(rows: readonly TestRow[], firstSeq = 1): ColumnChunk {
  const count = rows.length;
  const paths = new Set<string>();
  for (const row of rows) for (const path of Object.keys(row.props)) paths.add(path);
  const columns = new Map<string, Column>();
  for (const path of paths) columns.set(path, buildColumn(path, rows));
  return {
    rows: count,
    ts: Float64Array.from(rows, (row) => row.ts),
    createdAt: Float64Array.from(rows, (row) => row.ts + 5),
    seq: Float64Array.from(rows, (_, index) => firstSeq + index * 2),
    columns,
  };
}

function buildColumn(path: string, rows: readonly TestRow[]): Column {
  const tags = new Uint8Array(rows.length);
  const num = new Float64Array(rows.length);
  const str = new Int32Array(rows.length);
  const dict: string[] = [];
  const codes = new Map<string, number>();
  const lists: (readonly Primitive[] | null)[] = rows.map(() => null);
  const used = new Set<number>();
  rows.forEach((row, index) => {
    const value = row.props[path];
    const tag = tagOf(value);
    tags[index] = tag;
    used.add(tag);
    if (typeof value === 'number') num[index] = value;
    else if (typeof value === 'boolean') num[index] = value ? 1 : 0;
    else if (typeof value === 'string') {
      if (!codes.has(value)) codes.set(value, dict.push(value) - 1);
      str[index] = codes.get(value)!;
    } else if (Array.isArray(value)) lists[index] = value;
  });
  return {
    path,
    tags,
    num: used.has(TAG_NUM) || used.has(TAG_BOOL) ? num : null,
    str: used.has(TAG_STR) ? str : null,
    dict: used.has(TAG_STR) ? dict : null,
    lists: used.has(TAG_LIST) ? lists : null,
  };
}

function tagOf(value: TestValue): number {
  if (value === undefined) return TAG_MISSING;
  if (value === null) return TAG_NULL;
  if (typeof value === 'number') return TAG_NUM;
  if (typeof value === 'string') return TAG_STR;
  if (typeof value === 'boolean') return TAG_BOOL;
  return TAG_LIST;
}

/** Row `index` of `column` as a TestValue, reading only the member its tag names. */
export function valueAt(column: Column, index: number): TestValue {
  switch (column.tags[index]) {
    case TAG_MISSING:
      return undefined;
    case TAG_NULL:
      return null;
    case TAG_NUM:
      return column.num![index];
    case TAG_STR:
      return column.dict![column.str![index]];
    case TAG_BOOL:
      return column.num![index] !== 0;
    default:
      return column.lists![index];
  }
}

/** A chunk as comparable plain data: per path, per row values plus which members are null. */
export function viewChunk(chunk: ColumnChunk): unknown {
  const columns: Record<string, unknown> = {};
  for (const [path, column] of chunk.columns) {
    const values = Array.from({ length: chunk.rows }, (_, index) => valueAt(column, index));
    const members = {
      num: column.num !== null,
      str: column.str !== null,
      dict: column.dict !== null,
      lists: column.lists !== null,
    };
    columns[path] = { path: column.path, values, members };
  }
  return {
    rows: chunk.rows,
    ts: Array.from(chunk.ts.subarray(0, chunk.rows)),
    createdAt: Array.from(chunk.createdAt.subarray(0, chunk.rows)),
    seq: Array.from(chunk.seq.subarray(0, chunk.rows)),
    columns,
  };
}
