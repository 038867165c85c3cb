/**
 * The catalog as a whole, as records (records.ts): what cluster mode shares between nodes. Every
 * change of a catalog object (a project created or its key regenerated, an access key, a saved
 * query, a dataset definition) is made as records and committed here: the hooks registered with
 * beforeChange() are awaited first (cluster mode produces the records to the shared topic there;
 * a hook that rejects leaves nothing applied), then the records are applied. Records another node
 * made are applied as they are (apply()), and a node adopting the shared catalog replaces its
 * own with it (replace()). Applying is idempotent: a record equal to the object's state changes
 * nothing, so a node's own records read back from the topic cost nothing.
 */
import type { Logger } from '../base/logger.js';
import type { AccessKey, AccessKeys } from './access-keys.js';
import type { DatasetDefinition, Datasets } from './datasets.js';
import type { ProjectInfo } from './project-info.js';
import type { ProjectStore } from './projects.js';
import type { CatalogRecord, OrgState } from './records.js';
import type { SavedQueries } from './saved-queries.js';

export interface CatalogParts {
  readonly projects: ProjectStore;
  readonly accessKeys: AccessKeys;
  readonly savedQueries: SavedQueries;
  readonly datasets: Datasets;
}

type Part = 'projects' | 'accessKeys' | 'savedQueries' | 'datasets';

export class Catalog {
  private parts: CatalogParts | null = null;
  private readonly hooks = new Set<(records: readonly CatalogRecord[]) => Promise<void>>();

  constructor(private readonly logger: Logger) {}

  /** The parts are built with commit() in hand, so they are attached once built. */
  attach(parts: CatalogParts): void {
    this.parts = parts;
  }

  /** Registers `hook`, awaited before every change is applied; returns an unregister function. */
  beforeChange(hook: (records: readonly CatalogRecord[]) => Promise<void>): () => void {
    this.hooks.add(hook);
    return () => this.hooks.delete(hook);
  }

  /** Passes `records` to the hooks, then applies them; with no hook, applies them at once. */
  readonly commit = async (records: readonly CatalogRecord[]): Promise<void> => {
    for (const hook of [...this.hooks]) await hook(records);
    this.apply(records);
  };

  /** The organization and every object, in an order that applies (projects before what is theirs). */
  records(): CatalogRecord[] {
    const { projects, accessKeys, savedQueries, datasets } = this.parts!;
    const org: OrgState = { id: projects.orgId, key: projects.orgKey };
    return [{ kind: 'org', id: '', state: org }, ...projects.records(), ...accessKeys.records(),
      ...savedQueries.records(), ...datasets.records()];
  }

  /** Applies records in order; each changed part's file is written once, at the end. */
  apply(records: readonly CatalogRecord[]): void {
    const changed = new Set<Part>();
    for (const record of records) {
      try {
        const part = this.applyOne(record);
        if (part !== null) changed.add(part);
      } catch (error) {
        this.logger.write('error', 'catalog: a record could not be applied; skipped', { kind: record.kind, id: record.id, error });
      }
    }
    for (const part of changed) this.parts![part].save();
  }

  /** Makes the catalog exactly `records` (the organization's too): what they lack is removed. */
  replace(records: readonly CatalogRecord[]): void {
    const wanted = new Set(records.map((r) => `${r.kind}/${r.id}`));
    const gone = this.records().filter((r) => r.kind !== 'org' && !wanted.has(`${r.kind}/${r.id}`))
      .map((r) => ({ ...r, state: null }));
    // What belongs to a project goes before the project does.
    this.apply([...gone.reverse(), ...records]);
  }

  private applyOne(record: CatalogRecord): Part | null {
    const { projects, accessKeys, savedQueries, datasets } = this.parts!;
    switch (record.kind) {
      case 'org': {
        const org = record.state as OrgState;
        return projects.adoptOrg(org.id, org.key) ? 'projects' : null;
      }
      case 'project': return projects.apply(record.id, record.state as ProjectInfo | null) ? 'projects' : null;
      case 'access_key': return accessKeys.apply(record.id, record.state as AccessKey | null) ? 'accessKeys' : null;
      case 'saved_query': return savedQueries.apply(record.id, record.state as Parameters<SavedQueries['apply']>[1]) ? 'savedQueries' : null;
      case 'dataset': return datasets.apply(record.id, record.state as DatasetDefinition | null) ? 'datasets' : null;
    }
  }
}
