/**
 * The bounded request-body reader. It copies uWS's neutered chunks into one buffer and stops the
 * moment the body passes its bound (413 RequestTooLargeError); it never buffers past the bound.
 * The caller attaches onAborted first and answers exactly once; this module writes no response.
 */
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { ApiError } from '../../engine/index.js';
import { markAsUntransferable } from 'node:worker_threads';
import { BODY_SLAB_BYTES, SLAB_BODY_BYTES_MAX } from '../common/limits.js';

/**
 * The slab small bodies are cut from, and how much of it is taken; a full one is left to its
 * bodies. Untransferable, as Node's pool is: a body posted to a worker is copied, never moved with
 * its neighbours.
 */
let slab = newSlab();
let slabUsed = 0;

function newSlab(): Buffer {
  const bytes = Buffer.allocUnsafeSlow(BODY_SLAB_BYTES);
  markAsUntransferable(bytes.buffer);
  return bytes;
}

/** Room for a body of `bytes`: fresh bytes that no other body holds (see SLAB_BODY_BYTES_MAX). */
function bodyBuffer(bytes: number): Buffer {
  if (bytes > SLAB_BODY_BYTES_MAX) return Buffer.allocUnsafe(bytes);
  if (slabUsed + bytes > slab.length) {
    slab = newSlab();
    slabUsed = 0;
  }
  const body = slab.subarray(slabUsed, slabUsed + bytes);
  slabUsed += (bytes + 7) & ~7; // 8-aligned, as Node's pool cuts its buffers
  return body;
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(
    'RequestTooLargeError',
    `The request body is larger than ${maxBytes} bytes; send fewer or smaller events per request.`,
  );
}

/**
 * Reads the body of `res`; must be called synchronously inside the uWS handler. `declaredBytes` is
 * the Content-Length (null when absent): a declared length over the bound fails before reading.
 */
export function readBody(
  res: HttpResponse, declaredBytes: number | null, maxBytes: number, onAbort: (listener: () => void) => void,
): Promise<Buffer> {
  let done = false;
  return new Promise<Buffer>((resolve, reject) => {
    // A client that goes away mid-body: the request ends here (no one is left to answer), so the
    // server does not count it as in flight forever.
    onAbort(() => {
      if (done) return;
      done = true;
      reject(new ApiError('InvalidJsonError', 'The connection closed before the request body was complete.'));
    });
    if (declaredBytes !== null && declaredBytes > maxBytes) {
      done = true;
      reject(tooLarge(maxBytes));
      return;
    }
    // With a declared length we fill one buffer; otherwise we collect chunks.
    const target = declaredBytes !== null ? bodyBuffer(declaredBytes) : null;
    const chunks: Buffer[] = [];
    let receivedBytes = 0;
    res.onData((chunk, isLast) => {
      if (done) return;
      const bytes = chunk.byteLength;
      const totalBytes = receivedBytes + bytes;
      if (totalBytes > maxBytes || (target !== null && totalBytes > target.length)) {
        done = true;
        reject(totalBytes > maxBytes ? tooLarge(maxBytes) : badLength());
        return;
      }
      const view = new Uint8Array(chunk);
      if (target !== null) target.set(view, receivedBytes);
      else chunks.push(Buffer.from(view)); // copy: uWS neuters the chunk when we return
      receivedBytes += bytes;
      if (!isLast) return;
      done = true;
      resolve(target !== null
        ? target.subarray(0, receivedBytes)
        : Buffer.concat(chunks, receivedBytes));
    });
  });
}

function badLength(): ApiError {
  return new ApiError('InvalidJsonError',
    'The request body is longer than its Content-Length header.');
}
