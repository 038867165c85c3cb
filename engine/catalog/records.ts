/**
 * The catalog as records: each durable object of the organization (its id and key, a project
 * with its keys, an access key, a saved query, a dataset definition) is one record of its full
 * state, keyed by kind and id; a null state is a delete. Cluster mode shares the catalog by
 * producing these records to a compacted Kafka topic, where the latest record of each key is the
 * object's state (server/cluster/meta.ts, docs/cluster.md). Applying a record is idempotent.
 */
export type CatalogKind = 'org' | 'project' | 'access_key' | 'saved_query' | 'dataset';

export interface CatalogRecord {
  readonly kind: CatalogKind;
  /**
   * Unique within its kind: the project id; `<project id>/<key>` of an access key;
   * `<project id>/<name>` of a saved query or a dataset; for the organization, who published it.
   */
  readonly id: string;
  /** The object's full state as JSON data; null when it was deleted. */
  readonly state: unknown;
}

/** How a change is made: passed on (cluster mode: produced to the shared topic), then applied. */
export type CatalogCommit = (records: readonly CatalogRecord[]) => Promise<void>;

/** The organization's record state. */
export interface OrgState {
  readonly id: string;
  readonly key: string;
}

/** `<project id>/<name>` → [project id, name]; project ids hold no "/". */
export function splitId(id: string): [string, string] {
  const at = id.indexOf('/');
  return [id.slice(0, at), id.slice(at + 1)];
}
