/**
 * Showing keys: the first-start banner (the only time a server prints a key by itself) and
 * `tally keys --data DIR`, which prints them again from the data directory. Keys are shown as
 * `export` lines with the names the README's examples use, so they can be pasted into a shell.
 *
 * A first start that fails after creating the keys (a port in use, say) leaves `keys-not-shown`
 * in the data directory; the next start that gets as far as serving shows the banner then, and
 * removes the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { StartupError } from './startup.js';

/** The marker of keys created but not yet shown by a server that got as far as serving. */
const KEYS_NOT_SHOWN = 'keys-not-shown';

export interface KeysView {
  readonly orgId: string;
  readonly orgKey: string;
  readonly projects: readonly {
    readonly id: string;
    readonly name: string;
    readonly api_keys: { readonly master: string; readonly write: string; readonly read: string };
  }[];
}

/** The banner or `tally keys` text: the organization, then each project; the first as exports. */
export function keysText(view: KeysView, url: string | null): string {
  const lines = [
    `  organization id:  ${view.orgId}`,
    `  organization key: ${view.orgKey}`,
  ];
  for (const project of view.projects) {
    lines.push(
      '',
      `  project "${project.name}"`,
      `    id:         ${project.id}`,
      `    master key: ${project.api_keys.master}`,
      `    write key:  ${project.api_keys.write}`,
      `    read key:   ${project.api_keys.read}`,
    );
  }
  const first = view.projects[0];
  if (first !== undefined) {
    lines.push(
      '',
      `Paste into your shell (project "${first.name}"):`,
      `  export TALLY_URL=${url ?? 'http://127.0.0.1:8080'}`,
      `  export ORG_KEY=${view.orgKey}`,
      `  export PROJECT_ID=${first.id}`,
      `  export MASTER_KEY=${first.api_keys.master}`,
      `  export WRITE_KEY=${first.api_keys.write}`,
      `  export READ_KEY=${first.api_keys.read}`,
      '',
      'Record an event and count it:',
      `  curl -X POST "$TALLY_URL/3.0/projects/$PROJECT_ID/events/purchases" -H "Authorization: $WRITE_KEY" \\`,
      `    -H 'Content-Type: application/json' -d '{"price": 24.5, "item": {"name": "hat"}}'`,
      `  curl "$TALLY_URL/3.0/projects/$PROJECT_ID/queries/count?api_key=$READ_KEY&event_collection=purchases&timeframe=this_7_days"`,
    );
  }
  return lines.join('\n');
}

/** The first-start banner; `tally keys --data DIR` prints the same keys again. */
export function bannerText(view: KeysView, url: string, dataDir: string): string {
  return [
    '',
    'Tally created a new organization and a default project.',
    keysText(view, url),
    '',
    `The keys are kept in ${path.join(path.resolve(dataDir), 'projects.json')} (owner-only);`,
    `\`tally keys --data ${dataDir}\` (or \`npm start -- keys --data ${dataDir}\`) prints them again.`,
    '',
  ].join('\n');
}

/** `tally keys`: the data directory's keys, read from projects.json (a running server may hold it). */
export function readKeys(dataDir: string): KeysView {
  const file = path.join(path.resolve(dataDir), 'projects.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new StartupError(code === 'ENOENT'
      ? `no keys in ${path.resolve(dataDir)}: it holds no projects.json (start the server once, or choose the directory with --data)`
      : `cannot read ${file}: ${(error as Error).message}; run as the data directory's owner`);
  }
  let view: Partial<KeysView>;
  try {
    view = JSON.parse(text) as Partial<KeysView>;
  } catch {
    view = {};
  }
  if (typeof view.orgKey !== 'string' || !Array.isArray(view.projects)) {
    throw new StartupError(`${file} is not a projects file Tally wrote (damaged or edited by hand); `
      + 'restore it from a backup, or choose another directory with --data');
  }
  return { orgId: String(view.orgId ?? ''), orgKey: view.orgKey, projects: view.projects };
}

export function markKeysNotShown(dataDir: string): void {
  fs.writeFileSync(path.join(dataDir, KEYS_NOT_SHOWN), '');
}

export function keysNotShown(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, KEYS_NOT_SHOWN));
}

export function markKeysShown(dataDir: string): void {
  fs.rmSync(path.join(dataDir, KEYS_NOT_SHOWN), { force: true });
}
