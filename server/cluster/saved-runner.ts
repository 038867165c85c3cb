/**
 * How a node of a cluster of nodes runs saved queries' results and cached queries' refreshes
 * (engine option savedQueryRunner): through ClusterQueries.run, so they read their events wherever
 * they are stored. The engine opens (and starts its cached queries' first refreshes) before the
 * cluster is up, so a run waits until bind() was given the router and the node has caught up with
 * the events topic: a refresh never runs over a store that is behind, nor before peers can be asked.
 */
import type { ClusterQueries } from './queries.js';
import { CLUSTER_CATCH_UP_POLL_MS } from '../common/limits.js';

type Params = Readonly<Record<string, unknown>>;

export class SavedQueryRunner {
  private queries: ClusterQueries | null = null;
  private release: () => void = () => {};
  private readonly ready = new Promise<void>((resolve) => {
    this.release = resolve;
  });

  /** The engine's savedQueryRunner. */
  readonly run = async (project: string, analysis: string, params: Params, counted: boolean): Promise<unknown> => {
    await this.ready;
    return this.queries!.run(project, analysis, params, counted);
  };

  /** Runs go through `queries` once `caughtUp()` (checked every CLUSTER_CATCH_UP_POLL_MS until then). */
  bind(queries: ClusterQueries, caughtUp: () => boolean): void {
    this.queries = queries;
    const check = () => {
      if (caughtUp()) this.release();
      else setTimeout(check, CLUSTER_CATCH_UP_POLL_MS).unref();
    };
    check();
  }
}
