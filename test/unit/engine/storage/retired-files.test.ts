import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { RetiredFiles } from '../../../../engine/storage/retired-files.js';

function files(count: number): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-retired-'));
  return Array.from({ length: count }, (_, i) => {
    const file = path.join(dir, `${i}.arrow`);
    fs.writeFileSync(file, 'segment');
    return file;
  });
}

const exists = (list: string[]) => list.map((file) => fs.existsSync(file));

t.test('a file retired with no open lease is removed at once', async (t) => {
  const [a] = files(1);
  const retired = new RetiredFiles((file) => fs.rmSync(file));
  retired.retire([a]);
  t.notOk(fs.existsSync(a));
  t.equal(retired.waiting, 0);
});

t.test('a lease keeps files retired after it was taken until it is released', async (t) => {
  const list = files(2);
  const retired = new RetiredFiles((file) => fs.rmSync(file));
  const release = retired.lease();
  retired.retire(list);
  t.same(exists(list), [true, true], 'the reader may still open them');
  t.equal(retired.waiting, 2);
  release();
  t.same(exists(list), [false, false]);
  release(); // a second call does nothing
  t.equal(retired.waiting, 0);
});

t.test('a lease taken after a retirement does not hold its files; older leases do', async (t) => {
  const [a, b, c] = files(3);
  const retired = new RetiredFiles((file) => fs.rmSync(file));
  const first = retired.lease();
  retired.retire([a]);
  const second = retired.lease(); // listed after a was replaced: never names it
  retired.retire([b]);
  const third = retired.lease();
  retired.retire([c]);
  t.same(exists([a, b, c]), [true, true, true]);
  second(); // the first lease still holds all three
  t.same(exists([a, b, c]), [true, true, true]);
  first(); // only the third is open: it was taken after b was retired, before c was
  t.same(exists([a, b, c]), [false, false, true]);
  third();
  t.same(exists([a, b, c]), [false, false, false]);
});

t.test('close removes what open leases still held', async (t) => {
  const [a] = files(1);
  const retired = new RetiredFiles((file) => fs.rmSync(file));
  retired.lease();
  retired.retire([a]);
  t.ok(fs.existsSync(a));
  retired.close();
  t.notOk(fs.existsSync(a));
});
