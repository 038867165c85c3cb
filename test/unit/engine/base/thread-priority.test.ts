/**
 * A thread's nice value (engine/base/thread-priority.ts), read back from /proc: a worker that
 * lowers its priority lowers its own alone, and the engine's query threads run niced, so the
 * thread that serves writes gets the cores first when both want them.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { niceThread, threadId } from '../../../../engine/base/thread-priority.js';
import { openEngine } from '../../../../engine/index.js';

/** Nice value of each thread of this process, by thread id. */
function niceOfThreads(): Map<number, number> {
  const nice = new Map<number, number>();
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      nice.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return nice;
}

const linux = process.platform === 'linux' ? false : 'reads /proc';

t.test('a worker thread lowers its own priority, not its process\'s', { skip: linux }, async (t) => {
  const main = threadId();
  t.equal(main, process.pid, 'the main thread\'s id is the process id');
  const before = niceOfThreads().get(main!)!;
  const url = new URL('../../../../engine/base/thread-priority.js', import.meta.url).href;
  // The worker stays alive (an interval) until terminated: a worker with nothing left to do ends,
  // and its thread would be gone from /proc before it is read.
  const worker = new Worker(`setInterval(() => {}, 1000); import('${url}').then((m) => { const ok = m.niceThread(${before + 3}); require('node:worker_threads').parentPort.postMessage({ ok, tid: m.threadId() }); });`, { eval: true });
  const reply = await new Promise<{ ok: boolean; tid: number }>((resolve) => worker.once('message', resolve));
  t.ok(reply.ok, 'the worker set its nice value');
  const nice = niceOfThreads();
  t.equal(nice.get(reply.tid), before + 3, 'the worker thread runs niced');
  t.equal(nice.get(main!), before, 'the main thread does not');
  await worker.terminate();
  t.equal(niceThread(before), true, 'setting the same value again is allowed');
});

t.test('the engine\'s query threads run niced; the thread that serves writes does not', { skip: linux }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-nice-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const before = niceOfThreads();
  const engine = await openEngine({ dataDir: dir, queryWorkers: 2, flushIntervalMs: 3_600_000 });
  const project = engine.projects.list()[0]!.id;
  await engine.events.append(project, [{ collection: 'c', event: { a: 1 } }], { ip: '10.0.0.1', userAgent: 'x' });
  const timeframe = { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' };
  t.same(await engine.queries.run(project, 'count', { event_collection: 'c', timeframe }), { result: 1 });
  // Each query thread lowers its priority as it starts; one the query did not need may start later.
  const nicedThreads = () => [...niceOfThreads()].filter(([tid, nice]) => !before.has(tid) && nice === 5).length;
  const deadline = Date.now() + 10_000;
  while (nicedThreads() < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.ok(nicedThreads() >= 2, `the two query threads run at nice 5 (${nicedThreads()} threads do)`);
  t.equal(niceOfThreads().get(process.pid), before.get(process.pid), 'the main thread keeps its priority');
  await engine.close();
});
