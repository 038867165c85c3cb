/** Real segment reading whose segment reads are counted: what a chunk cache test gives its cache. */
import { compactColumns, readFooter, readSegment } from '../../../engine/storage/segment/reader.js';

export function countingFiles(): { files: { readSegment: typeof readSegment; readFooter: typeof readFooter; compactColumns: typeof compactColumns }; reads: () => number } {
  let reads = 0;
  const files = {
    readSegment: (file: string, columns?: readonly string[]) => {
      reads++;
      return readSegment(file, columns);
    },
    readFooter,
    compactColumns,
  };
  return { files, reads: () => reads };
}
