/**
 * Asynchronous extractions (docs/api.md §11): a submitted extraction becomes a job whose record
 * (extractions/<id>.json, written durably) survives restarts; jobs run one at a time, one query
 * worker task per segment through the query engine's own extraction code (query/exec/extraction.ts),
 * appending NDJSON or CSV rows to extractions/<id>.part, renamed to its final name when done. A
 * job found queued or running at open starts again from scratch. Records and files expire 24 h
 * after submission. This module owns no HTTP: the server streams the finished file.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../../base/errors.js';
import { ASYNC_EXTRACTION_EVENTS_MAX, ASYNC_EXTRACTION_TTL_MS, EXTRACTION_JOB_ATTEMPTS_MAX } from '../../base/limits.js';
import { parseRequest } from '../plan/request.js';
import type { ExtractionPlan } from '../plan/plan.js';
import type { QueryService } from './service.js';
import type { ScanSource } from '../../storage/chunk.js';
import { readJsonIfExists, writeFileDurable } from '../../storage/files.js';

export type ExtractionStatus = 'queued' | 'running' | 'done' | 'failed';

/** The stored record of a job; wire names. */
export interface ExtractionJob {
  readonly id: string;
  readonly project: string;
  status: ExtractionStatus;
  /** The submitted parameters (async/email removed); re-planned with `submitted_ms` on restart. */
  readonly query: Readonly<Record<string, unknown>>;
  readonly content_type: 'application/x-ndjson' | 'text/csv';
  readonly email: string | null;
  events: number | null;
  readonly created_at: string;
  readonly submitted_ms: number;
  finished_at: string | null;
  readonly expires_at: string;
  error: { message: string; error_code: string } | null;
}

export interface ExtractionJobsDeps {
  readonly dataDir: string;
  readonly clock: () => number;
  readonly queries: QueryService;
  /** Put before every new job's id (a cluster node's name, so any node knows where a job runs). */
  readonly idPrefix?: string;
  source(projectId: string, collection: string, startMs: number, endMs: number): ScanSource;
  /** Keeps the segment files the job lists on disk until the returned function is called. */
  lease?(): () => void;
  /** Where a failed job's cause (with its stack) is logged; the job itself keeps one sentence. */
  logFailure?(job: ExtractionJob, error: unknown): void;
}

const CONTENT_TYPES: Readonly<Record<string, ExtractionJob['content_type']>> = {
  'application/x-ndjson': 'application/x-ndjson',
  'application/json': 'application/x-ndjson',
  'application/jsonl': 'application/x-ndjson',
  'text/csv': 'text/csv',
};

/** True when an extraction request asks for an asynchronous job (`async: true` or an `email`). */
export function isAsyncExtraction(params: Readonly<Record<string, unknown>>): boolean {
  return (
    params.async === true ||
    params.async === 'true' ||
    (typeof params.email === 'string' && params.email !== '')
  );
}

export class ExtractionJobs {
  private readonly dir: string;
  private readonly jobs = new Map<string, ExtractionJob>();
  private readonly queue: string[] = [];
  private running = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly deps: ExtractionJobsDeps) {
    this.dir = path.join(deps.dataDir, 'extractions');
    fs.mkdirSync(this.dir, { recursive: true });
    for (const name of fs.readdirSync(this.dir)) {
      if (!name.endsWith('.json')) continue;
      const job = readJsonIfExists<ExtractionJob>(path.join(this.dir, name));
      if (job === undefined) continue;
      this.jobs.set(job.id, job);
      if (job.status === 'queued' || job.status === 'running') {
        job.status = 'queued';
        this.queue.push(job.id);
      }
    }
    this.queue.sort((a, b) => this.jobs.get(a)!.submitted_ms - this.jobs.get(b)!.submitted_ms);
    this.expire();
    this.timer = setInterval(() => this.expire(), 60_000);
    this.timer.unref();
    void this.pump();
  }

  /** Validates like a synchronous extraction (400 before any job exists), then queues the job. */
  submit(projectId: string, params: Readonly<Record<string, unknown>>): ExtractionJob {
    const {
      async: _async,
      email,
      content_type: type,
      content_encoding: _encoding,
      ...query
    } = params;
    const contentType =
      CONTENT_TYPES[typeof type === 'string' && type !== '' ? type : 'application/x-ndjson'];
    if (contentType === undefined) {
      throw new ApiError(
        'InvalidQueryError',
        '"content_type" must be "application/x-ndjson" (default) or "text/csv"',
      );
    }
    const now = this.deps.clock();
    const plan = this.plan(query, now);
    if (plan.latest !== null && plan.latest > ASYNC_EXTRACTION_EVENTS_MAX) {
      throw new ApiError(
        'ExtractionTooLargeError',
        `an asynchronous extraction returns at most ${ASYNC_EXTRACTION_EVENTS_MAX} events; lower "latest"`,
      );
    }
    this.deps.queries.takeExtraction(projectId);
    const job: ExtractionJob = {
      id: `${this.deps.idPrefix ?? ''}${randomBytes(12).toString('hex')}`,
      project: projectId,
      status: 'queued',
      query,
      content_type: contentType,
      email: typeof email === 'string' && email !== '' ? email : null,
      events: null,
      created_at: new Date(now).toISOString(),
      submitted_ms: now,
      finished_at: null,
      expires_at: new Date(now + ASYNC_EXTRACTION_TTL_MS).toISOString(),
      error: null,
    };
    this.jobs.set(job.id, job);
    this.save(job);
    this.queue.push(job.id);
    void this.pump();
    return job;
  }

  /** The job of this project, or undefined (unknown, another project's, or expired). */
  get(projectId: string, id: string): ExtractionJob | undefined {
    const job = this.jobs.get(id);
    return job !== undefined && job.project === projectId ? job : undefined;
  }

  /** The finished file of a job: 404 unknown or expired, 409 not done yet, the job's own error if it failed. */
  result(projectId: string, id: string): { file: string; contentType: string } {
    const job = this.get(projectId, id);
    if (job === undefined)
      throw new ApiError(
        'ResourceNotFoundError',
        `no extraction job "${id}" (jobs expire after 24 hours)`,
      );
    if (job.status === 'failed') {
      // 410, not 409 (which tells a client to wait): this result will never exist; submit again.
      throw new ApiError(
        'ExtractionFailedError',
        `extraction job "${id}" failed and has no result: ${job.error?.message ?? 'no cause recorded'}`,
      );
    }
    if (job.status !== 'done') {
      throw new ApiError(
        'ExtractionNotReadyError',
        `extraction job "${id}" is ${job.status}; poll its status until it is done`,
      );
    }
    const contentType =
      job.content_type === 'text/csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson';
    return { file: this.fileOf(job), contentType };
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  private plan(query: Readonly<Record<string, unknown>>, nowMs: number): ExtractionPlan {
    return parseRequest('extraction', query, { nowMs }) as ExtractionPlan;
  }

  private async pump(): Promise<void> {
    if (this.running || this.closed) return;
    this.running = true;
    try {
      for (let id = this.queue.shift(); id !== undefined && !this.closed; id = this.queue.shift()) {
        const job = this.jobs.get(id);
        if (job !== undefined && job.status === 'queued') await this.run(job);
      }
    } finally {
      this.running = false;
    }
  }

  private async run(job: ExtractionJob): Promise<void> {
    job.status = 'running';
    this.save(job);
    for (let attempt = 1; ; attempt++) {
      try {
        const lease = this.deps.lease?.();
        try {
          await this.attempt(job);
        } finally {
          lease?.();
        }
        break;
      } catch (error) {
        // The lease keeps every segment the job listed; a failed read (an I/O error) is retried.
        if (this.closed || error instanceof ApiError || attempt === EXTRACTION_JOB_ATTEMPTS_MAX) {
          this.fail(job, error);
          break;
        }
      }
    }
    if (this.closed) return;
    job.finished_at = new Date(this.deps.clock()).toISOString();
    this.save(job);
  }

  private fail(job: ExtractionJob, error: unknown): void {
    try {
      fs.rmSync(`${this.fileOf(job)}.part`, { force: true, recursive: true });
    } catch {
      // Left for expire(); the job fails either way.
    }
    if (this.closed) return;
    job.status = 'failed';
    if (error instanceof ApiError) {
      job.error = { message: error.message, error_code: error.error_code };
      return;
    }
    // An internal failure: the cause goes to the log, the client reads one sentence (no stack,
    // no file paths) naming the job to report.
    this.deps.logFailure?.(job, error);
    job.error = {
      message: `The extraction failed on an internal error after ${EXTRACTION_JOB_ATTEMPTS_MAX} attempts; report job ${job.id} to the operator.`,
      error_code: 'InternalServerError',
    };
  }

  /** One run of the job from scratch; throws when it fails. */
  private async attempt(job: ExtractionJob): Promise<void> {
    const part = `${this.fileOf(job)}.part`;
    const plan = this.plan(job.query, job.submitted_ms);
    const whole = this.deps.source(
      job.project,
      plan.collection,
      plan.range.startMs,
      plan.range.endMs,
    );
    const csvColumns = job.content_type === 'text/csv' ? columnsOf(plan, whole) : null;
    fs.writeFileSync(part, csvColumns === null ? '' : `${csvColumns.map(csvField).join(',')}\n`);
    const max = plan.latest ?? ASYNC_EXTRACTION_EVENTS_MAX;
    // With `latest` the newest segments come first, so the job can stop once it has N events.
    const segments = [...whole.segments].sort((a, b) =>
      plan.latest === null ? a.footer.tsMin - b.footer.tsMin : b.footer.tsMax - a.footer.tsMax,
    );
    // A segment's share carries no buffer rows, and names none (memoryVersion 0): a share that
    // named the buffer snapshot would have a query worker that holds it add its rows to every
    // segment's (duplicated rows), or fail on one that does not.
    const shares: ScanSource[] = segments.map((ref) => ({
      ...whole,
      segments: [ref],
      memory: null,
      memoryVersion: 0,
    }));
    const memory: ScanSource = { ...whole, segments: [] };
    if (plan.latest === null) shares.push(memory);
    else shares.unshift(memory);
    // With `latest` each share, newest first, goes to a piece of its own, and the pieces are
    // joined oldest first: the file is in time order, as the synchronous answer is (appending the
    // newest segment's events first put them ahead of older days').
    const pieces: string[] = [];
    // Pieces a crash left behind in an earlier attempt of this job.
    for (const name of fs.readdirSync(this.dir)) {
      if (name.startsWith(`${path.basename(part)}.`)) fs.rmSync(path.join(this.dir, name), { force: true });
    }
    let events = 0;
    try {
      for (const share of shares) {
        if (this.closed) return;
        if (events >= max && plan.latest !== null) break;
        let file = part;
        if (plan.latest !== null) {
          file = `${part}.${pieces.length}`;
          pieces.push(file);
          fs.writeFileSync(file, '');
        }
        events += await this.deps.queries.extractToFile(plan, share, {
          file,
          csvColumns,
          remaining: max - events,
          max,
        });
      }
      if (pieces.length > 0) appendFiles(part, pieces.reverse());
    } finally {
      for (const piece of pieces) fs.rmSync(piece, { force: true });
    }
    fs.renameSync(part, this.fileOf(job));
    job.events = events;
    job.status = 'done';
  }

  private expire(): void {
    const now = this.deps.clock();
    for (const job of [...this.jobs.values()]) {
      if (Date.parse(job.expires_at) > now || job.status === 'running') continue;
      this.jobs.delete(job.id);
      fs.rmSync(this.fileOf(job), { force: true });
      fs.rmSync(`${this.fileOf(job)}.part`, { force: true });
      fs.rmSync(path.join(this.dir, `${job.id}.json`), { force: true });
    }
  }

  private fileOf(job: ExtractionJob): string {
    return path.join(this.dir, `${job.id}.${job.content_type === 'text/csv' ? 'csv' : 'ndjson'}`);
  }

  private save(job: ExtractionJob): void {
    writeFileDurable(path.join(this.dir, `${job.id}.json`), JSON.stringify(job));
  }
}

/** CSV columns: the requested property_names, else every dotted path of the collection's schema. */
function columnsOf(plan: ExtractionPlan, source: ScanSource): string[] {
  if (plan.propertyNames !== null) return [...plan.propertyNames];
  return Object.keys(source.schema).sort();
}

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Appends the files' bytes to `target`, in order, a MiB at a time (a piece may hold millions of events). */
function appendFiles(target: string, files: readonly string[]): void {
  const out = fs.openSync(target, 'a');
  const buffer = Buffer.allocUnsafe(1 << 20);
  try {
    for (const file of files) {
      const input = fs.openSync(file, 'r');
      try {
        for (let read; (read = fs.readSync(input, buffer, 0, buffer.length, null)) > 0;) fs.writeSync(out, buffer, 0, read);
      } finally {
        fs.closeSync(input);
      }
    }
  } finally {
    fs.closeSync(out);
  }
}
