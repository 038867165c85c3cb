/** A project and its keys as the catalog stores them (a leaf of services/types.ts, which re-exports them). */
export type KeyKind = 'master' | 'write' | 'read';

export interface ProjectInfo {
  readonly id: string;
  readonly name: string;
  readonly api_keys: { readonly master: string; readonly write: string; readonly read: string };
}
