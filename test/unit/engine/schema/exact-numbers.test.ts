import t from 'tap';
import { parseJson } from '../../../../engine/ingest/batch.js';
import { markOutOfRangeNumbers, outOfRange } from '../../../../engine/schema/exact-numbers.js';

t.test('the range is decided from the literal, not from the double it rounds to', async (t) => {
  t.equal(outOfRange('9223372036854775807'), false, '2^63 - 1');
  t.equal(outOfRange('-9223372036854775808'), false, '-2^63');
  t.equal(outOfRange('9223372036854775808'), true, '2^63');
  t.equal(outOfRange('-9223372036854775809'), true, '-2^63 - 1');
  t.equal(outOfRange('9223372036854775807.0'), false);
  t.equal(outOfRange('9223372036854775807.5'), true, 'a fraction past the bound');
  t.equal(outOfRange('-9223372036854775808.5'), true);
  t.equal(outOfRange('-9223372036854775807.9999'), false);
  t.equal(outOfRange('0009223372036854775807'), false, 'leading zeros');
  t.equal(outOfRange('922337203685477580.8e1'), true, 'an exponent with 19 digits in a row');
  t.equal(outOfRange('9223372036854775807e-5'), false);
  t.equal(outOfRange('1234567890123456789e300'), true);
  t.equal(outOfRange('1234567890123456789e-300'), false);
  t.equal(outOfRange('0000000000000000000000'), false, 'zero');
});

t.test('out-of-range literals parse to Infinity; strings and other numbers are untouched', async (t) => {
  const text = '{"a":9223372036854775808,"b":-9223372036854775809,"c":9223372036854775807,"d":-9223372036854775808,' +
    '"s":"9223372036854775808 \\" 99999999999999999999","e":[1.5,-2e3,12345678901234567890]}';
  const value = parseJson(text, 'x') as Record<string, unknown>;
  t.equal(value.a, Infinity);
  t.equal(value.b, -Infinity);
  t.equal(value.c, 2 ** 63, 'in range: the nearest double');
  t.equal(value.d, -(2 ** 63));
  t.equal(value.s, '9223372036854775808 " 99999999999999999999', 'strings are never rewritten');
  t.same(value.e, [1.5, -2000, Infinity]);
  const plain = '{"n":123,"s":"abc"}';
  t.equal(markOutOfRangeNumbers(plain), plain, 'a text without 19 digits in a row is returned as is');
});
