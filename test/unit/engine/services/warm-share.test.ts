/** notLoading: whether cache warming may run, from the rate events arrive. */
import t from 'tap';
import { WARM_LOAD_EVENTS_PER_S } from '../../../../engine/base/limits.js';
import { notLoading } from '../../../../engine/services/warm-share.js';

t.test('warming runs, but not while a bulk load runs, and again after it', async (t) => {
  let ms = 0;
  let accepted = 0;
  const mayWarm = notLoading(() => accepted, () => ms);
  t.equal(mayWarm(), true, 'no writes');
  ms += 1_000;
  accepted += 10;
  t.equal(mayWarm(), true, 'a trickle of events');
  ms += 1_000;
  accepted += 2 * WARM_LOAD_EVENTS_PER_S;
  t.equal(mayWarm(), false, 'a load');
  ms += 200;
  t.equal(mayWarm(), false, 'within a second the verdict stands');
  ms += 2_000;
  accepted += WARM_LOAD_EVENTS_PER_S;
  t.equal(mayWarm(), true, 'the load over (half the threshold rate over 2.2 s)');
});
