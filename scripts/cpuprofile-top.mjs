#!/usr/bin/env node
/**
 * The functions with the most self time in a V8 .cpuprofile (as `node --cpu-prof` writes one per
 * thread): sums each sample's time delta into its function (name + url + line), and prints the top
 * N with their share of the profile's whole time and of its busy time (all but "(idle)"), and the
 * busy share of each second, to find a load's window. --from/--to (seconds since the profile's
 * start) keep only the samples in between. Samples are wall-clock: on a machine whose cores are
 * oversubscribed, time the thread waited for a core is charged to whatever it was running.
 *
 *   node scripts/cpuprofile-top.mjs FILE.cpuprofile [--top 15] [--from S] [--to S]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '15' }, from: { type: 'string', default: '0' }, to: { type: 'string', default: 'Infinity' } },
});
const file = positionals[0];
if (file === undefined) {
  process.stderr.write('usage: node scripts/cpuprofile-top.mjs FILE.cpuprofile [--top N] [--from S] [--to S]\n');
  process.exit(2);
}
const fromUs = Number(values.from) * 1e6;
const toUs = Number(values.to) * 1e6;
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map();
const busyBySecond = [];
let totalUs = 0;
let atUs = 0;
// timeDeltas[i] is the time before sample i; the time up to the next sample is charged to sample i.
for (let i = 0; i < profile.samples.length; i++) {
  atUs += profile.timeDeltas[i];
  const us = profile.timeDeltas[i + 1] ?? 0;
  if (us <= 0) continue;
  const { functionName, url, lineNumber } = byId.get(profile.samples[i]).callFrame;
  const second = Math.floor(atUs / 1e6);
  busyBySecond[second] = (busyBySecond[second] ?? 0) + (functionName === '(idle)' ? 0 : us);
  if (atUs < fromUs || atUs >= toUs) continue;
  const where = url === '' ? '' : `${url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}`;
  const key = `${functionName || '(anonymous)'}${where === '' ? '' : `  ${where}`}`;
  selfUs.set(key, (selfUs.get(key) ?? 0) + us);
  totalUs += us;
}
console.log(`busy share by second: ${Array.from(busyBySecond, (us) => `${Math.round((us ?? 0) / 1e4)}%`).join(' ')}`);
const idleUs = selfUs.get('(idle)') ?? 0;
const busyUs = totalUs - idleUs;
console.log(`${file}: ${(totalUs / 1e6).toFixed(2)} s profiled, ${(busyUs / 1e6).toFixed(2)} s busy (${((100 * busyUs) / totalUs).toFixed(1)}%)`);
console.log('  self ms   % all  % busy  function');
for (const [key, us] of [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  const busy = key === '(idle)' ? '' : ((100 * us) / busyUs).toFixed(1);
  console.log(`${(us / 1000).toFixed(0).padStart(9)}  ${((100 * us) / totalUs).toFixed(1).padStart(6)}  ${busy.padStart(6)}  ${key}`);
}
