/** Runs an external client (kcat, python3) with optional stdin and a hard timeout. */
import { spawn, spawnSync } from 'node:child_process';

export interface RunResult { code: number | null; stdout: string; stderr: string }

export function run(cmd: string, args: string[], input?: string, timeoutMs = 30_000): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input ?? '');
  });
}

/** True when `cmd args` exits 0 (probe for an installed client). */
export function available(cmd: string, args: string[]): boolean {
  try {
    return spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 }).status === 0;
  } catch {
    return false;
  }
}

/** The Debian python3 that has confluent_kafka (pyenv shims may shadow it), or null. */
export function pythonWithConfluent(): string | null {
  for (const python of ['/usr/bin/python3', 'python3']) {
    if (available(python, ['-c', 'import confluent_kafka'])) return python;
  }
  return null;
}
