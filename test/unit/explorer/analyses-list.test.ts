/**
 * The explorer (plain browser modules, no build) keeps its own copy of the analyses list; this
 * pins it to THE list (engine/query/plan/plan.ts), so an analysis added to the engine shows in the
 * query builder, or this fails.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ANALYSES } from '../../../engine/index.js';

const BUILDER = fileURLToPath(new URL('../../../../explorer/builder.js', import.meta.url));

t.test("the explorer's analyses are the engine's", async (t) => {
  const source = fs.readFileSync(BUILDER, 'utf8');
  const match = /export const ANALYSES = \[([^\]]*)\]/.exec(source);
  t.ok(match, 'builder.js declares ANALYSES');
  const listed = [...(match?.[1] ?? '').matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
  t.same(listed, [...ANALYSES]);
});
