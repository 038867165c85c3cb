import t from 'tap';
import { mulberry32 } from '../../../helpers/random.js';
import { formatTimestamp, parseTimestamp } from '../../../../engine/schema/timestamp.js';

t.test('the canonical form reads as Date.parse reads it, across the years 0000-9999', async (t) => {
  const random = mulberry32(7);
  const lo = Date.UTC(2000, 0, 1) - 2000 * 365.2425 * 86_400_000;
  const hi = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
  let checked = 0;
  for (let i = 0; i < 20_000; i++) {
    const ms = Math.floor(lo + random() * (hi - lo));
    const text = formatTimestamp(ms);
    if (text.length !== 24) continue; // years past 9999 are written with a sign
    if (parseTimestamp(text) !== ms || Date.parse(text) !== ms) t.fail(`${text}: ${parseTimestamp(text)} != ${ms}`);
    checked++;
  }
  t.ok(checked > 19_000, `${checked} instants`);
  t.equal(parseTimestamp('0050-06-01T12:00:00.000Z'), Date.parse('0050-06-01T12:00:00.000Z'), 'a year before 100 is that year');
  t.equal(parseTimestamp('0050-06-01T12:00:00Z'), Date.parse('0050-06-01T12:00:00.000Z'), 'also in the other forms');
  t.equal(parseTimestamp('2024-02-29T23:59:59.999Z'), Date.UTC(2024, 1, 29, 23, 59, 59, 999), 'a leap day');
});

t.test('24 characters that are not a valid timestamp are refused, other forms still read', async (t) => {
  for (const bad of [
    '2023-02-29T00:00:00.000Z', '2024-13-01T00:00:00.000Z', '2024-00-10T00:00:00.000Z',
    '2024-04-31T00:00:00.000Z', '2024-01-01T24:00:00.000Z', '2024-01-01T00:60:00.000Z',
    '2024-01-01T00:00:60.000Z', '2024-01-0aT00:00:00.000Z', '2024-01-01T00:00:00.0a0Z',
    '2024-01-01X00:00:00.000Z', '2024/01/01T00:00:00.000Z', '2024-01-01T00:00:00.000+',
    '+024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.-00Z', 'abcdefghijklmnopqrstuvwx',
  ]) t.ok(Number.isNaN(parseTimestamp(bad)), bad);
  const at = Date.UTC(2024, 0, 15, 18, 30, 0, 123);
  t.equal(parseTimestamp('2024-01-15T18:30:00.123z'), at, 'a lower-case z');
  t.equal(parseTimestamp('2024-01-15 18:30:00.123Z'), at, 'a space for the T');
  t.equal(parseTimestamp('2024-01-15T18:30:00,123Z'), at, 'a comma for the point');
  t.equal(parseTimestamp('2024-01-15T19:30:00.123+01'), at, 'a zone of hours alone');
  t.equal(parseTimestamp('2024-01-15T18:30:00.123456789Z'), at, 'nine digits of fraction');
});
