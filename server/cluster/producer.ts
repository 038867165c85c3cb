/**
 * Writes to the events topic for the HTTP write routes: a kafkajs idempotent producer (acks = all,
 * one request in flight) behind a group commit. Messages of the requests that arrive while a send
 * is in flight go together in the next one, so a load of small requests costs one round trip per
 * batch, not per request, as the WAL's shared fsync does in single-node mode.
 *
 * Every request is answered within `timeoutMs` of its arrival: acknowledged by Kafka (resolves),
 * or refused with 503 ServiceUnavailableError (a broker or the in-sync replicas missing, a
 * timeout). A refused write may still have reached Kafka (its request timed out after the leader
 * appended it) and then be stored: a 503 means "not acknowledged", as a lost connection does.
 *
 * After any failed send the producer is replaced by a new one (a new producer id). kafkajs rolls
 * its sequence numbers back when a send fails; had the broker appended that batch after all, the
 * old producer's next batch of the same size would reuse the sequence and the broker would take
 * it for a retry of the first and drop it while acknowledging it. A new producer id has no history.
 *
 * Each kafkajs send holds the messages of one partition, and Kafka's answer must name it. kafkajs
 * 2.2.4 mishandles a send that spans partitions led by different brokers when a leader moves during
 * its retries (tulios/kafkajs#1798): a retry skips every broker that already answered, so a
 * partition that moved to one is never sent while send() resolves (seen here as 21 acknowledged
 * events missing from every node after a broker was killed); and a partition already acknowledged
 * whose leader moved to a broker that has not answered is sent again with the next sequence number,
 * which Kafka takes as new messages (a batch stored twice on every node, once in a CI run). With
 * one partition a send there is no other broker's answer to keep. It costs a round trip per
 * partition of a group commit: single events through one node ~12,000 -> ~5,000 a second
 * (bench/cluster); one producer per partition would win that back.
 */
import { Kafka, Partitioners, type Message, type Producer } from 'kafkajs';
import { ApiError } from '../../engine/index.js';
import { CLUSTER_SEND_BYTES_MAX } from '../common/limits.js';

export interface LogMessage {
  readonly key: string;
  /** null: a tombstone (a deleted object of the compacted metadata topic). */
  readonly value: string | null;
  readonly headers?: Readonly<Record<string, string>>;
}

interface Pending {
  readonly messages: readonly LogMessage[];
  readonly bytes: number;
  readonly deadline: number;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  /** This request's 503, when not the producer's. */
  readonly unavailable?: ((reason: string) => ApiError) | undefined;
}


export interface EventLogProducerOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  /** The bound on a write's wait for Kafka, from its arrival to its answer. */
  readonly timeoutMs: number;
  readonly log: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  /** The 503 a refused send answers (default: an events write's). */
  readonly unavailable?: (reason: string) => ApiError;
  /** The topic's partitions: each send holds one partition's messages. */
  readonly partitions: number;
}

export class EventLogProducer {
  private producer: Producer;
  /** The current producer's connect, started at creation (it may fail: retried on next use). */
  private connected: Promise<void>;
  private queue: Pending[] = [];
  private sending = false;
  private closed = false;
  /** Sends acknowledged and failed since start (for the log and metrics). */
  acknowledged = 0;
  failed = 0;

  private readonly partitioner = Partitioners.DefaultPartitioner();
  private readonly metadata: { partitionId: number; leader: number }[];

  constructor(private readonly options: EventLogProducerOptions) {
    this.metadata = Array.from({ length: options.partitions }, (_, partitionId) => ({ partitionId, leader: 0 }));
    this.producer = this.newProducer();
    this.connected = this.connectCurrent();
  }

  /** Resolves once the first producer is connected (start-up checks that Kafka answers). */
  async ready(): Promise<void> {
    await this.connected;
  }

  /**
   * Produces `messages` (in order) and resolves once Kafka acknowledged all of them (acks = all);
   * rejects with a 503 ApiError when it cannot within the bound (`refused`'s, default the producer's).
   */
  send(messages: readonly LogMessage[], refused?: (reason: string) => ApiError): Promise<void> {
    if (this.closed) return Promise.reject(new ApiError('ServiceUnavailableError', 'Tally is shutting down.'));
    let bytes = 0;
    for (const m of messages) bytes += m.key.length + (m.value?.length ?? 0);
    return new Promise((resolve, reject) => {
      this.queue.push({ messages, bytes, deadline: Date.now() + this.options.timeoutMs, resolve, reject, unavailable: refused });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    while (this.sending) await new Promise((r) => setTimeout(r, 10));
    for (const p of this.queue.splice(0)) p.reject(new ApiError('ServiceUnavailableError', 'Tally is shutting down.'));
    await this.producer.disconnect().catch(() => {});
  }

  private newProducer(): Producer {
    return this.options.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      // kafkajs's own retries stay inside the bound; the bound itself is enforced here.
      retry: { initialRetryTime: 100, maxRetryTime: 1_000, retries: 8 },
    });
  }

  private connectCurrent(): Promise<void> {
    const connecting = this.producer.connect();
    connecting.catch(() => {}); // observed by whoever awaits it
    return connecting;
  }

  /** Drops `old` (after its send settles) and starts a new producer, unless that happened already. */
  private replace(old: Producer, inFlight: Promise<unknown>): void {
    if (this.producer !== old) return;
    void inFlight.catch(() => {}).finally(() => old.disconnect().catch(() => {}));
    this.producer = this.newProducer();
    this.connected = this.connectCurrent();
  }

  private pump(): void {
    if (this.sending || this.queue.length === 0) return;
    // Requests whose time is up before they could go are refused now.
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0]!.deadline <= now) {
      const late = this.queue.shift()!;
      late.reject((late.unavailable ?? this.options.unavailable ?? unavailable)('no time was left after the sends before it'));
      this.failed++;
    }
    if (this.queue.length === 0) return;
    const batch: Pending[] = [];
    let bytes = 0;
    while (this.queue.length > 0 && (batch.length === 0 || bytes + this.queue[0]!.bytes <= CLUSTER_SEND_BYTES_MAX)) {
      const next = this.queue.shift()!;
      bytes += next.bytes;
      batch.push(next);
    }
    this.sending = true;
    void this.sendBatch(batch).finally(() => {
      this.sending = false;
      this.pump();
    });
  }

  private async sendBatch(batch: readonly Pending[]): Promise<void> {
    const deadline = batch[0]!.deadline;
    const { byPartition, partitionsOf } = this.splitByPartition(batch);
    // This producer and its connect, whatever replaces them meanwhile: a send must never go to a
    // producer whose connect (its producer id) is still under way, as kafkajs would then number
    // the batch from 0 without a producer id and roll its sequence back below 0 on a failure.
    const producer = this.producer;
    const connected = this.connected;
    let attempt: Promise<unknown> = Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    try {
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no acknowledgement within ${this.options.timeoutMs} ms`)),
          Math.max(0, deadline - Date.now()));
      });
      // One send a partition (see the file's comment), all at once; each must name its partition.
      const sends = [...byPartition].map(([partition, messages]) => connected.then(() => producer.send({
        topic: this.options.topic,
        acks: -1,
        // How long the leader waits for the in-sync replicas; the rest of the bound is ours.
        timeout: Math.max(100, deadline - Date.now()),
        messages,
      })).then((results) => {
        if (!results.some((r) => r.partition === partition && r.errorCode === 0)) {
          throw new Error(`Kafka's answer does not name partition ${partition}`);
        }
      }));
      attempt = Promise.allSettled(sends);
      const settled = await Promise.race([attempt as Promise<PromiseSettledResult<void>[]>, expired]);
      const failed = new Map<number, unknown>();
      [...byPartition.keys()].forEach((partition, i) => {
        const outcome = settled[i]!;
        if (outcome.status === 'rejected') failed.set(partition, outcome.reason);
      });
      this.answer(batch, partitionsOf, failed);
      if (failed.size > 0 && !this.closed) this.replace(producer, attempt);
    } catch (error) {
      this.refuse(batch, (error as Error).message ?? String(error));
      if (!this.closed) this.replace(producer, attempt);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The batch's messages by partition (the partition named in each), and each request's partitions. */
  private splitByPartition(batch: readonly Pending[]): { byPartition: Map<number, Message[]>; partitionsOf: Set<number>[] } {
    const byPartition = new Map<number, Message[]>();
    const partitionsOf = batch.map((p) => {
      const partitions = new Set<number>();
      for (const m of p.messages) {
        const partition = this.partitionOf(m.key);
        partitions.add(partition);
        let list = byPartition.get(partition);
        if (list === undefined) byPartition.set(partition, list = []);
        list.push({ key: m.key, value: m.value, partition, ...(m.headers !== undefined && { headers: m.headers }) });
      }
      return partitions;
    });
    return { byPartition, partitionsOf };
  }

  /** Acknowledges the requests whose partitions Kafka all took; refuses the others. */
  private answer(batch: readonly Pending[], partitionsOf: readonly Set<number>[], failed: ReadonlyMap<number, unknown>): void {
    if (failed.size === 0) {
      for (const p of batch) p.resolve();
      this.acknowledged += batch.length;
      return;
    }
    const reason = String((failed.values().next().value as Error | undefined)?.message ?? 'a send failed');
    const refused = batch.filter((_, i) => [...partitionsOf[i]!].some((partition) => failed.has(partition)));
    batch.forEach((p, i) => {
      if (![...partitionsOf[i]!].some((partition) => failed.has(partition))) {
        p.resolve();
        this.acknowledged++;
      }
    });
    this.refuse(refused, reason, [...failed.keys()]);
  }

  private refuse(batch: readonly Pending[], reason: string, partitions?: readonly number[]): void {
    if (batch.length === 0) return;
    const messages = batch.reduce((n, p) => n + p.messages.length, 0);
    this.options.log('warn', 'cluster: a write to a topic failed; answered 503', {
      topic: this.options.topic, requests: batch.length, messages, reason, ...(partitions !== undefined && { partitions }),
    });
    for (const p of batch) p.reject((p.unavailable ?? this.options.unavailable ?? unavailable)(reason));
    this.failed += batch.length;
  }

  /** The partition kafkajs's default partitioner gives `key` (murmur2), named in each message sent. */
  private partitionOf(key: string): number {
    return this.partitioner({ topic: this.options.topic, partitionMetadata: this.metadata as never, message: { key: Buffer.from(key), value: null } });
  }
}

function unavailable(reason: string): ApiError {
  return new ApiError('ServiceUnavailableError',
    `Kafka did not acknowledge the write (${reason}); it was not acknowledged. Retry later: an event `
    + 'with svc.uniqueness_token is stored once however often it is retried.');
}
