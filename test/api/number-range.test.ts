/**
 * The seed's number range, exact, on every write path: 2^63 - 1 and -2^63 written in the JSON are
 * accepted; 2^63 and -2^63 - 1 are refused with InvalidPropertyValueError, though all four round
 * to the same two doubles.
 */
import t from 'tap';
import { serverForFile } from '../helpers/server.js';

const IN_RANGE = ['9223372036854775807', '-9223372036854775808'];
const OUT_OF_RANGE = ['9223372036854775808', '-9223372036854775809', '9223372036854775807.5', '1e19'];

const shared = serverForFile(t);

t.test('single POST', async (t) => {
  const { server, api } = shared;
  const path = `/3.0/projects/${server.projectId}/events/numbers`;
  for (const literal of IN_RANGE) {
    const response = await api.send('POST', path, { key: server.keys.write, body: `{"n":${literal}}` });
    t.equal(response.status, 201, `${literal} is accepted`);
  }
  for (const literal of OUT_OF_RANGE) {
    const response = await api.send('POST', path, { key: server.keys.write, body: `{"deep":{"n":[${literal}]}}` });
    t.equal(response.status, 400, `${literal} is refused`);
    t.equal(response.body.error_code, 'InvalidPropertyValueError');
    t.match(response.body.message, /9223372036854775807/);
  }
});

t.test('batch POST: each event is judged by its own literal', async (t) => {
  const { server, api } = shared;
  const raw = `{"numbers":[{"n":9223372036854775807},{"n":9223372036854775808},{"n":-9223372036854775808},{"n":-9223372036854775809}]}`;
  const response = await api.send('POST', `/3.0/projects/${server.projectId}/events`, {
    key: server.keys.write, body: raw,
  });
  t.equal(response.status, 200);
  t.same(response.body.numbers.map((r: { success: boolean }) => r.success), [true, false, true, false]);
  t.equal(response.body.numbers[1].error.name, 'InvalidPropertyValueError');
});

t.test('GET beacon with base64 data', async (t) => {
  const { server, api } = shared;
  const path = `/3.0/projects/${server.projectId}/events/numbers`;
  const data = (literal: string) => Buffer.from(`{"n":${literal}}`).toString('base64');
  t.equal((await api.get(`${path}?api_key=${server.keys.write}&data=${encodeURIComponent(data(IN_RANGE[0]!))}`)).status, 201);
  const refused = await api.get(`${path}?api_key=${server.keys.write}&data=${encodeURIComponent(data(OUT_OF_RANGE[0]!))}`);
  t.equal(refused.status, 400);
  t.equal(refused.body.error_code, 'InvalidPropertyValueError');
});
