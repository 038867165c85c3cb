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
 * Owners are asked in order (the node itself first, nodes the membership probe last found down
 * last); one that does not answer, or answers 503
 * (behind the topic, stopping), is skipped for the rest of the query. With no live owner left
 * the answer is 503 naming the partitions and why. Peers are called on POST
 * CLUSTER_QUERY_PATH with `Authorization: <--cluster-secret>`, compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError, ERROR_STATUS, type ErrorCode, type TallyEngine } from '../../engine/index.js';
import type { Assignment, Member } from './assignment.js';
import { messageKey } from './consumer.js';
import { CLUSTER_PEER_ANSWER_BYTES_MAX, CLUSTER_PEER_QUERY_TIMEOUT_MS } from '../common/limits.js';

/** The internal endpoint a node asks another's share of a query on. */
const CLUSTER_QUERY_PATH = '/internal/cluster/query';

type Params = Readonly<Record<string, unknown>>;

/** What a node asks another: the query as it took it, its `now`, the partitions it counts on. */
interface ShareRequest {
  readonly project: string;
  readonly analysis: string;
  readonly params: Params;
  readonly nowMs: number;
  readonly partitions: readonly number[];
  /**
   * partial: the encoded partial state of an aggregate; whole: the query's body; funnel: the
   * encoded actor sets of the funnel's `steps` (indexes), whose collections are in `partitions`.
   */
  readonly mode: 'partial' | 'whole' | 'funnel';
  readonly steps?: readonly number[];
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

  /** Runs a query on the node that owns what it reads (see the file's comment). */
  async run(project: string, analysis: string, params: Params): Promise<unknown> {
    const { engine, assignment, self } = this.options;
    const nowMs = Date.now();
    const { kind, collections } = engine.queries.describe(project, analysis, params, nowMs);
    const ofSteps = collections.map((c) => assignment.partitionOf(messageKey(project, c)));
    const partitions = [...new Set(ofSteps)].sort((a, b) => a - b);
    const candidates = this.ownersOfAll(partitions);
    // Only a funnel reads several collections, so only a funnel can have no owner of them all.
    if (candidates.length === 0) return this.funnelAcross(project, params, nowMs, ofSteps);
    const down: string[] = [];
    for (const node of candidates) {
      if (node.id === self) return engine.queries.run(project, analysis, params);
      const request: ShareRequest = { project, analysis, params, nowMs, partitions, mode: kind === 'aggregate' ? 'partial' : 'whole' };
      try {
        const answer = await this.ask(node, request);
        if (answer instanceof Uint8Array) return engine.queries.finishPartials(project, analysis, params, nowMs, [answer]);
        return answer;
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

  /** Serves another node's request for this node's share of a query: a partial state or a body. */
  async serve(body: unknown): Promise<Uint8Array | unknown> {
    const request = parseShareRequest(body);
    const missing = request.partitions.filter((p) => !this.owned.has(p));
    if (missing.length > 0) {
      throw new ApiError('ServiceUnavailableError', `Node ${this.options.self} does not store partitions ${missing.join(', ')} `
        + '(do the nodes have the same --cluster-nodes and --cluster-replicas?).');
    }
    if (!this.options.caughtUp()) {
      throw new ApiError('ServiceUnavailableError', `Node ${this.options.self} has not caught up with the events topic yet.`);
    }
    const { engine } = this.options;
    if (request.mode === 'funnel') return this.serveFunnel(request);
    if (request.mode === 'partial') return engine.queries.runPartial(request.project, request.analysis, request.params, request.nowMs);
    return engine.queries.run(request.project, request.analysis, request.params);
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
  private async ask(node: Member, request: ShareRequest): Promise<Uint8Array | unknown> {
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
    && r.partitions.every((p) => Number.isInteger(p) && p >= 0) && (r.mode === 'partial' || r.mode === 'whole'
      || (r.mode === 'funnel' && Array.isArray(r.steps) && r.steps.every((index) => Number.isInteger(index) && index >= 0)));
  if (!ok) {
    throw new ApiError('InvalidQueryError',
      'A cluster query share needs project, analysis, params, nowMs, partitions and mode (and steps for a funnel).');
  }
  return r as ShareRequest;
}
