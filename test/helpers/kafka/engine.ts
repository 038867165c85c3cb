/**
 * The real engine on a temporary data dir for black-box tests, with its default project, and a
 * reopen on the same dir for restart tests. fsync is off and queries run in-process: speed only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openEngine, type ProjectInfo, type TallyEngine } from '../../../engine/index.js';

export interface TestEngine {
  engine: TallyEngine;
  project: ProjectInfo;
  /** Closes the engine; keeps the data dir when `keepDir` (restart tests). */
  close(keepDir?: boolean): Promise<void>;
  /** Closes and reopens the engine on the same data dir. */
  reopen(): Promise<TestEngine>;
}

export async function openTestEngine(dataDir?: string): Promise<TestEngine> {
  const dir = dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tally-kafka-'));
  const engine = await openEngine({ dataDir: dir, fsync: false, queryWorkers: 0 });
  const project = engine.projects.list()[0] ?? (await engine.projects.create('kafka-test'));
  return {
    engine, project,
    async close(keepDir = false) {
      await engine.close();
      if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
    },
    async reopen() {
      await engine.close();
      return openTestEngine(dir);
    },
  };
}
