/** Writer/Reader: values survive growth of the buffer at every width. */
import t from 'tap';
import { Reader } from '../../../../../server/kafka/protocol/reader.js';
import { Writer } from '../../../../../server/kafka/protocol/writer.js';

t.test('writes across buffer growth and reads back', async (t) => {
  const w = new Writer(1);
  for (let i = 0; i < 300; i++) {
    w.int8(-1).int16(-2).int32(i).int64(2 ** 40 + i).uvarint(i * 1000).varint(-i).nullableString(`s${i}`);
  }
  const r = new Reader(w.toBuffer());
  for (let i = 0; i < 300; i++) {
    t.equal(r.int8(), -1);
    t.equal(r.int16(), -2);
    t.equal(r.int32(), i);
    t.equal(r.int64(), 2 ** 40 + i);
    t.equal(r.uvarint(), i * 1000);
    t.equal(r.varint(), -i || 0);
    t.equal(r.nullableString(), `s${i}`);
  }
  t.equal(r.remaining, 0);
});
