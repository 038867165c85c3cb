/**
 * Streams a file as a reply body (an asynchronous extraction's result, possibly gigabytes) with
 * uWS's backpressure protocol: tryEnd a chunk with the known total size; when uWS cannot take all
 * of it, pause the file stream and resume from onWritable with the unsent rest. Memory stays at
 * one chunk per response whatever the file size.
 */
import fs from 'node:fs';
import type { HttpResponse } from '@trufflesuite/uws-js-unofficial';
import { FILE_CHUNK_BYTES } from '../common/limits.js';
import type { Reply } from './types.js';

/**
 * Writes reply (status, headers) and the file's bytes; `onAbort` registers a callback for a client
 * that goes away. Resolves when the response is complete or aborted.
 */
export function streamFile(
  res: HttpResponse,
  reply: Reply & { file: string },
  headOnly: boolean,
  onAbort: (callback: () => void) => void,
  writeHead: (res: HttpResponse) => void,
): Promise<void> {
  const totalSize = fs.statSync(reply.file).size;
  return new Promise((resolve) => {
    let finished = false;
    const stream = fs.createReadStream(reply.file, { highWaterMark: FILE_CHUNK_BYTES });
    const finish = () => {
      if (finished) return;
      finished = true;
      stream.destroy();
      resolve();
    };
    onAbort(finish);
    res.cork(() => writeHead(res));
    if (headOnly || totalSize === 0) {
      res.cork(() => (headOnly ? res.endWithoutBody(totalSize) : res.end()));
      return finish();
    }
    stream.on('error', () => {
      if (!finished) res.close();
      finish();
    });
    stream.on('data', (data) => {
      if (finished) return;
      const chunk = data as Buffer;
      const start = res.getWriteOffset();
      let ok = false;
      let done = false;
      res.cork(() => {
        [ok, done] = res.tryEnd(chunk, totalSize);
      });
      if (done) return finish();
      if (ok) return;
      stream.pause();
      res.onWritable((offset) => {
        const [sent, complete] = res.tryEnd(chunk.subarray(offset - start), totalSize);
        if (complete) finish();
        else if (sent) stream.resume();
        return sent;
      });
    });
  });
}
