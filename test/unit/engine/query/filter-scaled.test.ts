/**
 * Range filters over numbers kept as stored integers (Column.scaled) compare the integers with
 * bounds moved onto them (filter-eval.ts scaledLow/scaledHigh): an integer v passes exactly when
 * its number, v / factor as `num` would hold it, passes.
 */
import t from 'tap';
import { scaledHigh, scaledLow } from '../../../../engine/query/eval/filter-scaled.js';
import { mulberry32 } from '../../../helpers/random.js';

t.test('the bounds on the integers select exactly the rows the bounds on the numbers do', async (t) => {
  const random = mulberry32(7);
  let checked = 0;
  for (const factor of [1, 10, 100, 1_000, 1e6, 1e9]) {
    for (let trial = 0; trial < 2_000; trial++) {
      const v0 = Math.floor((random() - 0.5) * 2 * (trial % 2 === 0 ? 1e5 : 2 ** 31));
      // Bounds on a stored value, beside it (a ulp away) and between two of them.
      const at = v0 / factor;
      const bounds = [at, at + Number.EPSILON * Math.abs(at), at - Number.EPSILON * Math.abs(at), (v0 + 0.5) / factor, (v0 - 0.4999) / factor];
      for (const bound of bounds) {
        const low = scaledLow(bound, factor);
        const high = scaledHigh(bound, factor);
        for (let v = v0 - 3; v <= v0 + 3; v++) {
          if ((v >= low) !== (v / factor >= bound) || (v <= high) !== (v / factor <= bound)) {
            t.fail(`factor ${factor}, bound ${bound}, v ${v}: low ${low}, high ${high}`);
            return;
          }
          checked++;
        }
      }
    }
  }
  t.ok(checked > 100_000, `${checked} comparisons agree`);
});

t.test('bounds past every 32-bit integer keep all rows or none', async (t) => {
  for (const factor of [1, 100]) {
    t.equal(scaledLow(-Infinity, factor), -Infinity);
    t.equal(scaledHigh(Infinity, factor), Infinity);
    t.equal(scaledLow(Infinity, factor), Infinity);
    t.equal(scaledHigh(-Infinity, factor), -Infinity);
    t.equal(scaledLow(1e300, factor), Infinity, 'no integer is that large');
    t.equal(scaledHigh(1e300, factor), Infinity, 'every integer is below');
    t.equal(scaledLow(-1e300, factor), -Infinity, 'every integer is above');
    t.equal(scaledHigh(-1e300, factor), -Infinity, 'none is below');
    t.equal(scaledLow(-0, factor), 0);
    t.equal(scaledHigh(-0, factor), 0);
  }
});
