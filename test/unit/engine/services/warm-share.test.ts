/** warmShareByLoad: the share of the query caches warming may fill, from the rate events arrive. */
import t from 'tap';
import { WARM_LOAD_EVENTS_PER_S, WARM_SHARE_LOADING } from '../../../../engine/base/limits.js';
import { warmShareByLoad } from '../../../../engine/services/warm-share.js';

t.test('all of the cache, but a share while a bulk load runs, and all again after it', async (t) => {
  let ms = 0;
  let accepted = 0;
  const share = warmShareByLoad(() => accepted, () => ms);
  t.equal(share(), 1, 'no writes: all of it');
  ms += 1_000;
  accepted += 10;
  t.equal(share(), 1, 'a trickle of events: all of it');
  ms += 1_000;
  accepted += 2 * WARM_LOAD_EVENTS_PER_S;
  t.equal(share(), WARM_SHARE_LOADING, 'a load: the loading share');
  ms += 200;
  t.equal(share(), WARM_SHARE_LOADING, 'within a second the verdict stands');
  ms += 2_000;
  accepted += WARM_LOAD_EVENTS_PER_S;
  t.equal(share(), 1, 'the load over (half the threshold rate over 2.2 s): all of it');
});
