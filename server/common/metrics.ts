/**
 * Prometheus metrics (text exposition by prom-client, the well-kept standard client): process
 * metrics (memory, CPU, event loop lag, GC), HTTP requests by route, method and status with their
 * latency, query latency by analysis, rate-limit rejections, and the engine's numbers (events
 * accepted and refused, buffered rows, segments, their rows and bytes, the compaction backlog),
 * read from engine.stats() at scrape time so the write and query paths pay one histogram
 * observation per request and nothing more.
 */
import client from 'prom-client';
import { ANALYSES as ANALYSES_LIST, type TallyEngine } from '../../engine/index.js';
import { WRITE_PATHS, writeCounts, type WritePathName } from './write-counts.js';

/** A cluster node's numbers (server/cluster/status.ts), read at scrape time. */
export interface ClusterGauges {
  /** Per partition this node stores: records in Kafka its store does not hold, Kafka asked now. */
  lagsNow(): Promise<readonly { readonly partition: number; readonly lag: number }[]>;
  /** Per node of --cluster-nodes: it answered its last probe (up), with 200 (ready). */
  members(): readonly { readonly id: number; readonly up: boolean; readonly ready: boolean }[];
}

/** Analyses as labels; anything else a client puts in the path is `other` (labels stay bounded). */
const ANALYSES: ReadonlySet<string> = new Set(ANALYSES_LIST);

export class Metrics {
  readonly registry = new client.Registry();
  private readonly requests: client.Histogram<'route' | 'method' | 'status'>;
  private readonly queries: client.Histogram<'analysis'>;
  private readonly rateLimited: client.Counter<'route'>;

  constructor(engine: TallyEngine) {
    const registry = this.registry;
    client.collectDefaultMetrics({ register: registry, prefix: 'tally_' });
    this.requests = new client.Histogram({
      name: 'tally_http_request_duration_seconds', help: 'HTTP requests by route pattern, method and status',
      labelNames: ['route', 'method', 'status'], registers: [registry],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
    this.queries = new client.Histogram({
      name: 'tally_query_duration_seconds', help: 'Queries over HTTP by analysis (errors included)',
      labelNames: ['analysis'], registers: [registry],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    });
    this.rateLimited = new client.Counter({
      name: 'tally_rate_limited_total', help: 'Requests refused with 429 by route pattern',
      labelNames: ['route'], registers: [registry],
    });
    const walSync = new client.Histogram({
      name: 'tally_wal_fsync_seconds', help: 'WAL fdatasync latency (one per group commit: its O_DSYNC write, written and synced)', registers: [registry],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    engine.onWalSync((seconds) => walSync.observe(seconds));
    const byPath = (counts: () => Readonly<Record<WritePathName, number>>) => function collect(this: client.Counter<'path'>) {
      this.reset();
      const now = counts();
      for (const path of WRITE_PATHS) this.inc({ path }, now[path]);
    };
    new client.Counter({
      name: 'tally_writes_accepted_total', help: 'Events accepted by the path they came in on', labelNames: ['path'],
      registers: [registry], collect: byPath(() => writeCounts().accepted),
    });
    new client.Counter({
      name: 'tally_writes_refused_total', help: 'Events refused (invalid) by the path they came in on', labelNames: ['path'],
      registers: [registry], collect: byPath(() => writeCounts().refused),
    });
    let stats = engine.stats();
    const fresh = () => (stats = engine.stats());
    const fromStats = (name: string, help: string, read: () => number, kind: 'counter' | 'gauge') => {
      if (kind === 'counter') {
        new client.Counter({ name, help, registers: [registry], collect() { this.reset(); this.inc(read()); } });
      } else {
        new client.Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
      }
    };
    // The first metric of a scrape refreshes the engine's numbers; the others read the same snapshot.
    fromStats('tally_events_accepted_total', 'Events accepted (stored, or dropped as duplicate tokens)',
      () => fresh().eventsAccepted, 'counter');
    fromStats('tally_events_refused_total', 'Events refused as invalid', () => stats.eventsRefused, 'counter');
    fromStats('tally_events_failed_total', 'Valid events refused with 503 because the disk failed them (full, I/O error)',
      () => stats.eventsFailed, 'counter');
    fromStats('tally_wal_failures_total', 'WAL write or sync failures', () => stats.walFailures, 'counter');
    fromStats('tally_wal_recoveries_total', 'WAL recoveries after a failure, without a restart', () => stats.walRecoveries, 'counter');
    fromStats('tally_flush_failures_total', 'Flushes or compactions that failed (retried)', () => stats.flushFailures, 'counter');
    fromStats('tally_writes_held_back_total', 'Writes that waited for a flush because the write buffers were full', () => stats.writesHeldBack, 'counter');
    fromStats('tally_background_paused_seconds_total', 'Seconds merges and delete rewrites stood still while queries ran',
      () => stats.backgroundPausedMs / 1000, 'counter');
    fromStats('tally_queries_running', 'Queries executing (K of the admission limit)', () => stats.queriesRunning, 'gauge');
    fromStats('tally_queries_waiting', 'Queries waiting for a slot (Q)', () => stats.queriesWaiting, 'gauge');
    fromStats('tally_segments_warmed_total', 'Segments decoded into the query caches as they were written, before any query asked',
      () => stats.segmentsWarmed, 'counter');
    fromStats('tally_segments_shared_total', 'Segments a query worker put in shared memory for the other workers to read',
      () => stats.segmentsShared, 'counter');
    fromStats('tally_segments_read_from_peers_total', "Segment loads queries made from another query worker's shared memory, not the files",
      () => stats.segmentsReadFromPeers, 'counter');
    fromStats('tally_buffer_rows', 'Rows in the write buffers, not yet in segments', () => stats.bufferRows, 'gauge');
    fromStats('tally_segments', 'Segment files', () => stats.segments, 'gauge');
    fromStats('tally_segment_rows', 'Rows in segment files', () => stats.segmentRows, 'gauge');
    fromStats('tally_segment_bytes', 'Bytes of segment files', () => stats.segmentBytes, 'gauge');
    fromStats('tally_compaction_backlog', 'Day partitions with small segments compaction has yet to merge', () => stats.compactionBacklog, 'gauge');
    fromStats('tally_memory_budget_bytes', 'The memory budget for caches and buffers', () => stats.memoryBudgetBytes, 'gauge');
  }

  /** Cluster mode: per-partition lag and the nodes' membership. */
  addCluster(cluster: ClusterGauges): void {
    const registers = [this.registry];
    new client.Gauge({
      name: 'tally_cluster_partition_lag', help: 'Records of each partition this node stores that are in Kafka but not yet in its store',
      labelNames: ['partition'], registers,
      async collect() {
        const lags = await cluster.lagsNow();
        this.reset();
        for (const { partition, lag } of lags) this.set({ partition: String(partition) }, lag);
      },
    });
    const byNode = (name: string, help: string, read: (m: { up: boolean; ready: boolean }) => boolean) => new client.Gauge({
      name, help, labelNames: ['node'], registers,
      collect() {
        this.reset();
        for (const member of cluster.members()) this.set({ node: String(member.id) }, read(member) ? 1 : 0);
      },
    });
    byNode('tally_cluster_node_up', 'Per node of --cluster-nodes: 1 if it answered its last probe (every 2 s), else 0', (m) => m.up);
    byNode('tally_cluster_node_ready', 'Per node of --cluster-nodes: 1 if it answered its last probe ready (caught up), else 0', (m) => m.ready);
  }

  /** Children of the request histogram by route, method and status: a label lookup once, not per request. */
  private readonly requestSeries = new Map<string, client.Histogram.Internal<'route' | 'method' | 'status'>>();

  /** One answered request; `analysis` for query routes. */
  observe(route: string, method: string, status: number, seconds: number, analysis: string | undefined): void {
    const series = `${route} ${method} ${status}`;
    let child = this.requestSeries.get(series);
    if (child === undefined) {
      child = this.requests.labels({ route, method, status: String(status) });
      this.requestSeries.set(series, child);
    }
    child.observe(seconds);
    if (analysis !== undefined) this.queries.observe({ analysis: ANALYSES.has(analysis) ? analysis : 'other' }, seconds);
    if (status === 429) this.rateLimited.inc({ route });
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
