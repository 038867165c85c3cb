/**
 * The shapes shared by the HTTP layer: what a route handler receives (Ctx, copied out of uWS's
 * stack-allocated request) and what it returns (Reply). Handlers never touch uWS objects.
 */
import type {
  AppendResult, BatchAppendResult, DeletePlan, EventToWrite, ExtractionJob, Logger, TallyEngine, WriteContext,
} from '../../engine/index.js';
import type { Metrics } from '../common/metrics.js';

export interface Ctx {
  /** Upper case; HEAD requests reach GET handlers with method 'HEAD'. */
  readonly method: string;
  /** Path after the /v3 → /3.0 alias, without the query string. */
  readonly path: string;
  /** Percent-decoded path parameters by name. */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The raw query string, for parameters URLSearchParams would mangle ('+' in base64). */
  readonly rawQuery: string;
  /** The API key from `Authorization` or `?api_key=`, '' when absent. */
  readonly key: string;
  readonly accept: string;
  readonly userAgent: string;
  /** Client IP: socket peer, or the first X-Forwarded-For entry behind a trusted proxy. */
  readonly ip: string;
  /** The request body; empty for methods without one. */
  readonly body: Buffer;
}

export interface Reply {
  readonly status: number;
  /** Serialized as the JSON body. */
  readonly json?: unknown;
  /** A file streamed as the body (server/http/stream-file.ts); wins over body and json. */
  readonly file?: string;
  /** A raw body; wins over json. */
  readonly body?: Uint8Array;
  readonly contentType?: string;
  readonly headers?: ReadonlyArray<readonly [string, string]>;
}

export interface Deps {
  readonly engine: TallyEngine;
  /** Error lines (500s, failed response writes). */
  readonly log: (line: string) => void;
  /** The structured logger: request lines at debug, with their request id. */
  readonly logger?: Logger;
  /** Prometheus metrics (server/common/metrics.ts); absent where no one scrapes (some tests). */
  readonly metrics?: Metrics;
  /** Cluster mode (server/cluster/): writes go to Kafka, not to the engine; absent on a single node. */
  readonly cluster?: ClusterWrites;
}

/** How the write routes write in cluster mode: as events.append / events.appendBatch, through Kafka. */
export interface ClusterWrites {
  /** False until the node has read its partitions up to where they ended when it started (/ready). */
  readonly caughtUp: boolean;
  write(projectId: string, events: readonly EventToWrite[], ctx: WriteContext): Promise<AppendResult[]>;
  writeBatch(projectId: string, body: Uint8Array, ctx: WriteContext): Promise<BatchAppendResult>;
  /** Produces a checked delete to the collection's partition; every owner applies it there. */
  delete(projectId: string, collection: string, plan: DeletePlan): Promise<void>;
  /** With --cluster-nodes: queries are answered by the nodes that store what they read. */
  readonly queries?: ClusterQueryRoutes | undefined;
  /** The `cluster` section of /health (node id, owned partitions, caught up, peers up and down). */
  readonly status?: { health(): object };
}

/** Cluster queries as the HTTP routes use them (server/cluster/queries.ts). */
export interface ClusterQueryRoutes {
  /** As engine.queries.run, on a node that stores what the query reads. */
  run(projectId: string, analysis: string, params: Readonly<Record<string, unknown>>): Promise<unknown>;
  /** True when `secret` is the cluster's. */
  authenticate(secret: string): boolean;
  /** Another node's request for this one's share of a query: a partial state's bytes, a body, or a job's `{file, contentType}`. */
  serve(request: unknown): Promise<unknown>;
  /** As engine.datasets.results, on a node that stores the dataset's collection. */
  datasetResults(projectId: string, name: string, indexBy: string, timeframe: unknown): Promise<unknown>;
  /** As engine.queries.submitExtraction, on a node that stores the collection; the job's id names that node. */
  submitExtraction(projectId: string, params: Readonly<Record<string, unknown>>): Promise<ExtractionJob>;
  /** As engine.queries.extractionJob, asked of the node the id names. */
  extractionJob(projectId: string, id: string): Promise<ExtractionJob | undefined>;
  /** As engine.queries.extractionResult; a job of another node comes as its bytes. */
  extractionResult(projectId: string, id: string): Promise<{ file: string; contentType: string } | { body: Uint8Array; contentType: string }>;
}

export type Handler = (ctx: Ctx, deps: Deps) => Reply | Promise<Reply>;

export interface RouteSpec {
  /** Segments; ':name' captures one segment. */
  readonly pattern: string;
  readonly methods: Partial<Record<'GET' | 'POST' | 'PUT' | 'DELETE', Handler>>;
  /** Largest body accepted (413 RequestTooLargeError beyond it). */
  readonly bodyBytesMax?: number;
}
