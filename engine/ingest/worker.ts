/**
 * An ingest worker: parses a batch body and prepares its events (svc fields, placeholders, add-ons,
 * leaves) with its own enricher, then hands the packed result back (ingest/batch.ts). A body of
 * plain events is read straight into leaves (fast-batch.ts).
 * Jobs run one at a time, in the order they arrive.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { WriteContext } from './event-preparer.js';
import { createEnricher, type EnricherOptions } from '../enrich/pipeline.js';
import { isApiError, type ErrorCode } from '../base/errors.js';
import { EventPreparer } from './event-preparer.js';
import { collectGarbage } from '../base/memory.js';
import { newLeaves } from '../schema/flatten.js';
import { LeafEncoder } from '../schema/leaf-codec.js';
import { packBatch, packedTransferables, parseBatchBody, preparedOf, type PackedBatch } from './batch.js';
import { FastBatchReader } from './fast-batch.js';

export interface IngestJob {
  readonly id: number;
  readonly body: Uint8Array;
  readonly ctx: WriteContext;
  readonly now: number;
  readonly nowIso: string;
}

/** Sent when writes go quiet: drop the last batch's objects and collect this thread's heap. */
export interface CollectJob {
  readonly id: number;
  readonly collect: true;
}

export type IngestReply =
  | { readonly id: number; readonly packed: PackedBatch }
  | { readonly id: number; readonly collected: true }
  | { readonly id: number; readonly refused: { code: ErrorCode; message: string } }
  | { readonly id: number; readonly failure: string };

const port = parentPort!;
const enricher = await createEnricher(workerData as EnricherOptions);
const preparer = new EventPreparer(enricher);
const leaves = newLeaves();
const encoder = new LeafEncoder();
const reader = new FastBatchReader(enricher);

port.on('message', (job: IngestJob | CollectJob) => {
  if ('collect' in job) {
    // The last batch's strings and results stay reachable from these until the next batch.
    leaves.paths.length = 0;
    leaves.values.length = 0;
    leaves.start = 0;
    leaves.count = 0;
    collectGarbage();
    port.postMessage({ id: job.id, collected: true } satisfies IngestReply);
    return;
  }
  try {
    const fast = reader.read(job.body, job.ctx, job.now, leaves);
    const packed: PackedBatch = fast !== null
      ? { ...preparedOf(fast), leaves: encoder.encode(leaves, leaves.count) }
      : packBatch(preparer, encoder, parseBatchBody(job.body), job.ctx, job.now, job.nowIso, leaves);
    port.postMessage({ id: job.id, packed } satisfies IngestReply, packedTransferables(packed));
  } catch (error) {
    const reply: IngestReply = isApiError(error)
      ? { id: job.id, refused: { code: error.error_code, message: error.message } }
      : { id: job.id, failure: error instanceof Error ? (error.stack ?? error.message) : String(error) };
    port.postMessage(reply);
  }
});
