/** Lenient query-string values: parsed as JSON when they are JSON, else kept as the raw string. */
import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { lenientParams } from '../../../../server/http/parse.js';

/** The rule of docs/api.md §6 as written: JSON.parse, and the raw text when it throws. */
function reference(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

t.test('each value is what JSON.parse gives, or the raw text when it is not JSON', async (t) => {
  const values = ['tiny', 'this_7_days', 'true', 'false', 'null', ' true', 'true ', '\ttrue\n', 'truex', 'tru', 't', 'nullable',
    'falsey', 'f', 'n', '5', '-5', '-', '-x', ' 5', '5 ', '\u00a05', '1e3', '0x10', '01', '"q"', '"q', '[1,2]', '[1,', '{"a":1}',
    '{bad', '', ' ', '{"property_name":"n","operator":"gte","property_value":1}', 'Infinity', 'NaN', '\r\n[ ]\r\n', 'US', ...'0123456789'];
  const random = mulberry32(11);
  const alphabet = ['t', 'r', 'u', 'e', 'f', 'a', 'l', 's', 'n', ' ', '\t', '1', '9', '0', '-', '.', 'E', '"', '[', ']', '{', '}', ':', ',', 'x'];
  for (let i = 0; i < 2000; i++) {
    let value = '';
    const length = Math.floor(random() * 7);
    for (let j = 0; j < length; j++) value += alphabet[Math.floor(random() * alphabet.length)];
    values.push(value);
  }
  const query = new URLSearchParams(values.map((value, i) => [`p${i}`, value]));
  query.append('api_key', 'secret');
  const params = lenientParams(query);
  let same = 0;
  for (const [i, value] of values.entries()) {
    const expected = reference(value);
    if (JSON.stringify(params[`p${i}`]) === JSON.stringify(expected) && typeof params[`p${i}`] === typeof expected) same++;
    else t.fail(`${JSON.stringify(value)}: ${JSON.stringify(params[`p${i}`])} != ${JSON.stringify(expected)}`);
  }
  t.equal(same, values.length, `${values.length} values as JSON.parse takes them`);
  t.notOk(Object.hasOwn(params, 'api_key'), 'the key is not a parameter');
  t.same(lenientParams(new URLSearchParams('timeframe=this_1_days&filters=%5B%5D&latest=10')), { timeframe: 'this_1_days', filters: [], latest: 10 });
});
