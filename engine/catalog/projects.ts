/**
 * The organization and its projects with their keys, persisted in `projects.json`. Keys are 64 hex
 * characters from a CSPRNG and are compared in constant time. Never log a key from here.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { KeyKind, ProjectInfo } from './project-info.js';
import { ApiError } from '../base/errors.js';
import type { CatalogRecord } from './records.js';
import { readJsonIfExists, writeFileDurable } from '../storage/files.js';

interface ProjectsFile {
  orgId: string;
  orgKey: string;
  projects: ProjectInfo[];
}

function newKey(): string {
  return randomBytes(32).toString('hex');
}

export class ProjectStore {
  private readonly file: string;
  private state: ProjectsFile;
  readonly created: boolean;

  constructor(dataDir: string, orgId: string, orgKey: string | undefined) {
    this.file = path.join(dataDir, 'projects.json');
    const loaded = readJsonIfExists<ProjectsFile>(this.file);
    this.created = loaded === undefined;
    this.state = loaded ?? { orgId, orgKey: orgKey ?? newKey(), projects: [] };
    // An operator-supplied org id or key wins over the stored one (docs/api.md §1).
    if (orgKey !== undefined) this.state.orgKey = orgKey;
    this.state.orgId = orgId;
  }

  get orgId(): string {
    return this.state.orgId;
  }

  get orgKey(): string {
    return this.state.orgKey;
  }

  save(): void {
    writeFileDurable(this.file, JSON.stringify(this.state, null, 2));
  }

  /** A new project (checked name, new id and keys), not stored: apply() stores it. */
  plan(name: string): ProjectInfo {
    if (typeof name !== 'string' || name.length === 0 || name.length > 256) {
      throw new ApiError('MissingRequiredRequestFieldError', 'A project needs a "name" of 1 to 256 characters.');
    }
    return {
      id: randomBytes(12).toString('hex'),
      name,
      api_keys: { master: newKey(), write: newKey(), read: newKey() },
    };
  }

  create(name: string): ProjectInfo {
    const project = this.plan(name);
    this.apply(project.id, project);
    this.save();
    return project;
  }

  /** Stores a project's state (a new one goes last) or removes it (null) in memory; false when nothing changed. */
  apply(id: string, project: ProjectInfo | null): boolean {
    const index = this.state.projects.findIndex((p) => p.id === id);
    if (project === null) {
      if (index < 0) return false;
      this.state.projects.splice(index, 1);
    } else if (index < 0) {
      this.state.projects.push(project);
    } else {
      if (JSON.stringify(this.state.projects[index]) === JSON.stringify(project)) return false;
      this.state.projects[index] = project;
    }
    return true;
  }

  records(): CatalogRecord[] {
    return this.state.projects.map((project) => ({ kind: 'project', id: project.id, state: project }));
  }

  /** Adopts an organization id and key (cluster mode: the shared one); false when they were these already. */
  adoptOrg(orgId: string, orgKey: string): boolean {
    if (this.state.orgId === orgId && this.state.orgKey === orgKey) return false;
    this.state.orgId = orgId;
    this.state.orgKey = orgKey;
    return true;
  }

  list(): ProjectInfo[] {
    return this.state.projects.slice();
  }

  get(id: string): ProjectInfo | undefined {
    return this.state.projects.find((project) => project.id === id);
  }

  /** The project with a new write or read key, not stored: apply() stores it. */
  planRegenerate(id: string, kind: 'write' | 'read'): ProjectInfo {
    const old = this.get(id);
    if (old === undefined) throw new ApiError('ResourceNotFoundError', `Project ${id} does not exist.`);
    return { ...old, api_keys: { ...old.api_keys, [kind]: newKey() } };
  }

  authenticate(id: string, key: string): KeyKind | null {
    const project = this.get(id);
    if (!project || typeof key !== 'string') return null;
    const keys = project.api_keys;
    if (safeEqual(keys.master, key)) return 'master';
    if (safeEqual(keys.write, key)) return 'write';
    if (safeEqual(keys.read, key)) return 'read';
    return null;
  }

  isAnyMasterKey(key: string): boolean {
    return this.state.projects.some((project) => safeEqual(project.api_keys.master, key));
  }

  isOrgKey(key: string): boolean {
    return safeEqual(this.state.orgKey, key);
  }
}

/**
 * Equality in time that depends on the lengths only, never on where the strings first differ.
 * Keys are ASCII hex; a loop over char codes does what timingSafeEqual does without two Buffer
 * allocations per check (every request checks up to three keys).
 */
export function safeEqual(expected: string, actual: string): boolean {
  if (expected.length !== actual.length) return false;
  let difference = 0;
  // Bound: the key's length (64 for generated keys); no early exit.
  for (let i = 0; i < expected.length; i++) difference |= expected.charCodeAt(i) ^ actual.charCodeAt(i);
  return difference === 0;
}
