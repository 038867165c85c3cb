/**
 * Queries over a cluster of nodes that each store only their partitions (assignment.ts).
 *
 * An event's partition is chosen by its key, `<project>/<collection>`, so all of a collection is
 * in one partition, and every node that stores that partition holds all of the collection, in
 * the same rows (they are stamped before Kafka; ids follow the partition's order). A query is
 * therefore answered exactly by one live owner of the partitions it reads:
 *
 * - the node that took it, when it owns them (the query runs as on a single node);
 * - else, for an aggregate analysis (count ... select_unique, group_by, interval, multi_analysis),
 *   a live owner computes the query's partial state over its store (engine.queries.runPartial,
 *   the partial-state codec, application/octet-stream) and the node that took the query merges
 *   and finishes it as the worker pool's shares are (engine.queries.finishPartials);
 * - an extraction, or a funnel whose collections have one owner in common, is run whole there;
 * - a funnel whose steps' collections have no owner in common is split: each step is scanned on
 *   one live owner of its collection's partition (the node itself for what it stores, else as few
 *   nodes as it can), which sends the actor sets of its steps as a funnel step state (the
 *   partial-state codec's version 2), and the node that took the query combines them with the
 *   engine's own step logic (engine.queries.finishPartials), so the answer is a single node's.
 *
 * Saved queries' results and cached queries' refreshes run through run() (saved-runner.ts); a
 * dataset's results and an asynchronous extraction job are asked of a live owner of the collection's
 * partition (the dataset's buckets and the job's file live there), and a job's id names the node
 * that runs it, so any node asks that node for its status and result.
 *
 * Owners are asked in order (the node itself first, nodes the membership probe last found down
 * last); one that does not answer, or answers 503
 * (behind the topic, stopping), is skipped for the rest of the query. With no live owner left
 * the answer is 503 naming the partitions and why. Peers are called on POST
 * CLUSTER_QUERY_PATH with `Authorization: <--cluster-secret>`, compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError, ERROR_STATUS, type ErrorCode, type ExtractionJob, type TallyEngine } from '../../engine/index.js';
import type { Assignment, Member } from './assignment.js';
import { messageKey } from './consumer.js';
import { CLUSTER_PEER_ANSWER_BYTES_MAX, CLUSTER_PEER_QUERY_TIMEOUT_MS } from '../common/limits.js';

/** The internal endpoint a node asks another's share of a query on. */
const CLUSTER_QUERY_PATH = '/internal/cluster/query';

type Params = Readonly<Record<string, unknown>>;

const MODES = ['partial', 'whole', 'funnel', 'dataset', 'job_submit', 'job', 'job_result'] as const;
type Mode = typeof MODES[number];

/** What a node asks another: the query as it took it, its `now`, the partitions it counts on. */
interface ShareRequest {
  readonly project: string;
  readonly analysis: string;
  readonly params: Params;
  readonly nowMs: number;
  readonly partitions: readonly number[];
  /**
   * partial: the encoded partial state of an aggregate; whole: the query's body; funnel: the
   * encoded actor sets of the funnel's `steps` (indexes), whose collections are in `partitions`;
   * dataset: a dataset's results (params: name, index_by, timeframe); job_submit: an asynchronous
   * extraction queued there (params: the query); job, job_result: a job there and its file (params: id).
   */
  readonly mode: Mode;
  readonly steps?: readonly number[];
  /** false: a cached query's refresh, kept out of the rate limits. */
  readonly counted?: boolean;
}

export interface ClusterQueryOptions {
  readonly engine: TallyEngine;
  readonly assignment: Assignment;
  /** This node's id. */
  readonly self: number;
  readonly secret: string;
  readonly caughtUp: () => boolean;
  /** True when node `id` did not answer its last membership probe (status.ts): it is asked last. */
  readonly seenDown?: (id: number) => boolean;
}

class PeerDown extends Error {
  override name = 'PeerDown';
}

const digest = (text: string) => createHash('sha256').update(text).digest();

export class ClusterQueries {
  private readonly secretDigest: Buffer;
  private readonly owned: ReadonlySet<number>;

  constructor(private readonly options: ClusterQueryOptions) {
    this.secretDigest = digest(options.secret);
    this.owned = new Set(options.assignment.ownedBy(options.self));
  }

  /** True when `secret` is the cluster's (constant time). */
  authenticate(secret: string): boolean {
    return secret !== '' && timingSafeEqual(digest(secret), this.secretDigest);
  }

  /**
   * Runs a query on the node that owns what it reads (see the file's comment); `counted` false:
   * a cached query's refresh, outside the rate limits there too.
   */
  async run(project: string, analysis: string, params: Params, counted = true): Promise<unknown> {
    const { engine, assignment } = this.options;
    const nowMs = Date.now();
    const { kind, collections } = engine.queries.describe(project, analysis, params, nowMs);
    const ofSteps = collections.map((c) => assignment.partitionOf(messageKey(project, c)));
    const partitions = [...new Set(ofSteps)].sort((a, b) => a - b);
    // Only a funnel reads several collections, so only a funnel can have no owner of them all.
    if (this.ownersOfAll(partitions).length === 0) return this.funnelAcross(project, params, nowMs, ofSteps);
    const mode = kind === 'aggregate' ? 'partial' : 'whole';
    return this.onOwner(partitions, () => engine.queries.run(project, analysis, params, counted), async (node) => {
      const answer = await this.ask(node, { project, analysis, params, nowMs, partitions, mode, ...(!counted && { counted }) });
      return answer instanceof Uint8Array ? engine.queries.finishPartials(project, analysis, params, nowMs, [answer]) : answer;
    });
  }

  /** A dataset's results (docs/api.md §10), from a live owner of its collection's partition: the buckets live there. */
  async datasetResults(project: string, name: string, indexBy: string, timeframe: unknown): Promise<unknown> {
    const { engine, assignment } = this.options;
    const collection = engine.datasets.get(project, name).query.event_collection as string;
    const partitions = [assignment.partitionOf(messageKey(project, collection))];
    const params = { name, index_by: indexBy, timeframe };
    return this.onOwner(partitions, () => engine.datasets.results(project, name, indexBy, timeframe), async (node) => {
      const answer = await this.ask(node, { project, analysis: 'dataset', params, nowMs: Date.now(), partitions, mode: 'dataset' });
      return (answer as { result?: unknown }).result;
    });
  }

  /** Queues an asynchronous extraction on a live owner of its collection's partition (its id names that node). */
  async submitExtraction(project: string, params: Params): Promise<ExtractionJob> {
    const { engine, assignment } = this.options;
    const nowMs = Date.now();
    const { collections } = engine.queries.describe(project, 'extraction', params, nowMs);
    const partitions = collections.map((c) => assignment.partitionOf(messageKey(project, c)));
    return this.onOwner(partitions, () => engine.queries.submitExtraction(project, params), async (node) => {
      const answer = await this.ask(node, { project, analysis: 'extraction', params, nowMs, partitions, mode: 'job_submit' });
      return (answer as { result: ExtractionJob }).result;
    });
  }

  /** A job, from the node that runs it (named by its id): undefined when unknown; 503 when that node does not answer. */
  async extractionJob(project: string, id: string): Promise<ExtractionJob | undefined> {
    const node = this.runnerOf(id);
    if (node === null) return this.options.engine.queries.extractionJob(project, id);
    const answer = await this.askRunner(node, id, { project, analysis: 'extraction', params: { id }, nowMs: Date.now(), partitions: [], mode: 'job' });
    return (answer as { result: ExtractionJob | null }).result ?? undefined;
  }

  /** A finished job's file from the node that runs it: its path here, or its bytes from there. */
  async extractionResult(project: string, id: string): Promise<{ file: string; contentType: string } | { body: Uint8Array; contentType: string }> {
    const node = this.runnerOf(id);
    if (node === null) return this.options.engine.queries.extractionResult(project, id);
    const request: ShareRequest = { project, analysis: 'extraction', params: { id }, nowMs: Date.now(), partitions: [], mode: 'job_result' };
    return this.askRunner(node, id, request, true) as Promise<{ body: Uint8Array; contentType: string }>;
  }

  /** The node a job id names when it is another node (null: this node, or an id of no node). */
  private runnerOf(id: string): Member | null {
    const match = /^n(\d+)-/.exec(id);
    const node = match === null ? undefined : this.options.assignment.members.find((m) => m.id === Number(match[1]));
    return node === undefined || node.id === this.options.self ? null : node;
  }

  private async askRunner(node: Member, id: string, request: ShareRequest, raw = false): Promise<unknown> {
    try {
      return await this.ask(node, request, raw);
    } catch (error) {
      if (!(error instanceof PeerDown)) throw error;
      throw new ApiError('ServiceUnavailableError', `Extraction job "${id}" is kept by the node that runs it, and ${error.message}. Retry later.`);
    }
  }

  /**
   * `local()` when this node stores `partitions`, else `remote(node)` of their first live owner
   * (see ownersOfAll); 503 naming the partitions when none answers.
   */
  private async onOwner<T>(partitions: readonly number[], local: () => T | Promise<T>, remote: (node: Member) => Promise<T>): Promise<T> {
    const down: string[] = [];
    for (const node of this.ownersOfAll(partitions)) {
      if (node.id === this.options.self) return local();
      try {
        return await remote(node);
      } catch (error) {
        if (!(error instanceof PeerDown)) throw error;
        down.push(error.message);
      }
    }
    throw this.unavailable(partitions, down);
  }

  /**
   * A funnel whose steps' partitions no node stores together (`ofSteps`: each step's partition):
   * each node chosen (sharesOf) scans the steps it stores; their states are combined here. A node
   * that is down is skipped and its partitions asked of their other owners.
   */
  private async funnelAcross(project: string, params: Params, nowMs: number, ofSteps: readonly number[]): Promise<unknown> {
    const { engine, self } = this.options;
    const down = new Map<number, string>();
    const states: Uint8Array[] = [];
    let left = [...new Set(ofSteps)].sort((a, b) => a - b);
    while (left.length > 0) {
      const shares = this.sharesOf(left, down);
      const answers = await Promise.allSettled(shares.map(async ({ node, partitions }) => {
        const steps = ofSteps.flatMap((p, index) => (partitions.includes(p) ? [index] : []));
        if (node.id === self) return engine.queries.runPartial(project, 'funnel', params, nowMs, steps);
        const answer = await this.ask(node, { project, analysis: 'funnel', params, nowMs, partitions, mode: 'funnel', steps });
        if (answer instanceof Uint8Array) return answer;
        throw new ApiError('InternalServerError', `node ${node.id} (${node.url}) answered a funnel's steps with a body, not their actor sets`);
      }));
      const failed = answers.find((answer) => answer.status === 'rejected' && !(answer.reason instanceof PeerDown));
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
      answers.forEach((answer, k) => {
        if (answer.status === 'fulfilled') states.push(answer.value);
        else down.set(shares[k].node.id, (answer.reason as PeerDown).message);
      });
      left = left.filter((p) => shares.some(({ node, partitions }) => partitions.includes(p) && down.has(node.id)));
    }
    return engine.queries.finishPartials(project, 'funnel', params, nowMs, states);
  }

  /**
   * Who scans which of `partitions`: for each, this node if it stores it, else an owner already
   * chosen, else its first owner not `down`; 503 for a partition none of whose owners is left.
   */
  private sharesOf(partitions: readonly number[], down: ReadonlyMap<number, string>): { node: Member; partitions: number[] }[] {
    const { assignment, self } = this.options;
    const shares = new Map<number, { node: Member; partitions: number[] }>();
    for (const p of partitions) {
      const owners = assignment.ownersOf(p).filter((node) => !down.has(node.id));
      if (owners.length === 0) throw this.unavailable([p], assignment.ownersOf(p).map((node) => down.get(node.id)!));
      const node = owners.find((m) => m.id === self) ?? owners.find((m) => shares.has(m.id)) ?? owners[0];
      const share = shares.get(node.id);
      if (share === undefined) shares.set(node.id, { node, partitions: [p] });
      else share.partitions.push(p);
    }
    return [...shares.values()];
  }

  /** 503 naming the partitions no live node stores, and why each owner was skipped. */
  private unavailable(partitions: readonly number[], down: readonly string[]): ApiError {
    const many = partitions.length > 1;
    return new ApiError('ServiceUnavailableError', `Partition${many ? 's' : ''} ${partitions.join(', ')} `
      + `of ${this.options.assignment.topic} ${many ? 'are' : 'is'} unavailable: no node that stores `
      + `${many ? 'them' : 'it'} answered (${down.join('; ')}). Retry later.`);
  }

  /**
   * Serves another node's request for this node's share of a query: a partial state or a body;
   * for a job's file, `{file, contentType}`.
   */
  async serve(body: unknown): Promise<Uint8Array | unknown> {
    const request = parseShareRequest(body);
    const { engine } = this.options;
    const { project, analysis, params, nowMs } = request;
    // A job is kept by the node that runs it, whatever it stores or how far it has read.
    if (request.mode === 'job') return { result: engine.queries.extractionJob(project, String(params.id)) ?? null };
    if (request.mode === 'job_result') return engine.queries.extractionResult(project, String(params.id));
    const missing = request.partitions.filter((p) => !this.owned.has(p));
    if (missing.length > 0) {
      throw new ApiError('ServiceUnavailableError', `Node ${this.options.self} does not store partitions ${missing.join(', ')} `
        + '(do the nodes have the same --cluster-nodes and --cluster-replicas?).');
    }
    if (!this.options.caughtUp()) {
      throw new ApiError('ServiceUnavailableError', `Node ${this.options.self} has not caught up with the events topic yet.`);
    }
    const counted = request.counted !== false;
    switch (request.mode) {
      case 'funnel': return this.serveFunnel(request);
      case 'partial': return engine.queries.runPartial(project, analysis, params, nowMs);
      case 'dataset': return engine.datasets.results(project, String(params.name), String(params.index_by), params.timeframe);
      case 'job_submit': return { result: engine.queries.submitExtraction(project, params) };
      default: return engine.queries.run(project, analysis, params, counted);
    }
  }

  /** The actor sets of a funnel's steps, each checked to read a collection of the partitions this node was asked for. */
  private async serveFunnel(request: ShareRequest): Promise<Uint8Array> {
    const { engine, assignment } = this.options;
    const { project, params, nowMs, partitions } = request;
    const steps = request.steps ?? [];
    const { kind, collections } = engine.queries.describe(project, request.analysis, params, nowMs);
    const elsewhere = steps.filter((index) => kind !== 'funnel' || index >= collections.length
      || !partitions.includes(assignment.partitionOf(messageKey(project, collections[index]))));
    if (kind !== 'funnel' || elsewhere.length > 0) {
      throw new ApiError('InvalidQueryError', `Funnel steps ${elsewhere.join(', ')} do not read partitions ${partitions.join(', ')} `
        + '(do the nodes have the same --cluster-nodes and topic?).');
    }
    return engine.queries.runPartial(project, 'funnel', params, nowMs, steps);
  }

  /**
   * Nodes that store every one of `partitions`: this node first, then in the first partition's
   * order, those the last membership probe found down last (still asked: the probe may be stale).
   */
  private ownersOfAll(partitions: readonly number[]): Member[] {
    const { assignment, self } = this.options;
    const [first = 0, ...rest] = partitions;
    const owners = assignment.ownersOf(first)
      .filter((node) => rest.every((p) => assignment.ownersOf(p).some((m) => m.id === node.id)));
    const seenDown = this.options.seenDown ?? (() => false);
    const others = owners.filter((node) => node.id !== self);
    return [...owners.filter((node) => node.id === self),
      ...others.filter((node) => !seenDown(node.id)), ...others.filter((node) => seenDown(node.id))];
  }

  /** A peer's share: bytes of a partial state, or a body; PeerDown when it cannot give it now. */
  private async ask(node: Member, request: ShareRequest, raw = false): Promise<Uint8Array | unknown> {
    const who = `node ${node.id} (${node.url})`;
    let response: Response;
    try {
      response = await fetch(`${node.url}${CLUSTER_QUERY_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: this.options.secret },
        body: JSON.stringify(request),
        signal: AbortSignal.timeout(CLUSTER_PEER_QUERY_TIMEOUT_MS),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new PeerDown(`${who} did not answer: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    }
    if (Number(response.headers.get('content-length') ?? 0) > CLUSTER_PEER_ANSWER_BYTES_MAX) {
      await response.body?.cancel();
      throw new ApiError('ResponseTooLargeError', `The answer of ${who} is larger than ${CLUSTER_PEER_ANSWER_BYTES_MAX} bytes.`);
    }
    if (response.status === 200 && raw) {
      return { body: new Uint8Array(await response.arrayBuffer()), contentType: response.headers.get('content-type') ?? 'application/octet-stream' };
    }
    if (response.status === 200) {
      return response.headers.get('content-type') === 'application/octet-stream'
        ? new Uint8Array(await response.arrayBuffer()) : response.json();
    }
    const text = await response.text();
    let error: { message?: unknown; error_code?: unknown } = {};
    try {
      error = JSON.parse(text) as typeof error;
    } catch { /* not JSON: reported as it is */ }
    const message = typeof error.message === 'string' ? error.message : text.slice(0, 200);
    if (response.status === 503) throw new PeerDown(`${who} answered 503: ${message}`);
    const code = typeof error.error_code === 'string' && error.error_code in ERROR_STATUS ? error.error_code as ErrorCode : null;
    if (code !== null && code !== 'InvalidApiKeyError') throw new ApiError(code, message);
    throw new ApiError('InternalServerError', `${who} answered ${response.status}: ${message}`);
  }
}

function parseShareRequest(body: unknown): ShareRequest {
  const r = body as Partial<ShareRequest> | null;
  const ok = r !== null && typeof r === 'object' && typeof r.project === 'string' && typeof r.analysis === 'string'
    && r.params !== null && typeof r.params === 'object' && typeof r.nowMs === 'number' && Array.isArray(r.partitions)
    && r.partitions.every((p) => Number.isInteger(p) && p >= 0) && MODES.includes(r.mode as Mode)
    && (r.mode !== 'funnel' || (Array.isArray(r.steps) && r.steps.every((index) => Number.isInteger(index) && index >= 0)))
    && (r.counted === undefined || typeof r.counted === 'boolean');
  if (!ok) {
    throw new ApiError('InvalidQueryError',
      'A cluster query share needs project, analysis, params, nowMs, partitions and mode (and steps for a funnel).');
  }
  return r as ShareRequest;
}
