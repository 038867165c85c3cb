/**
 * Reads a segment's Arrow IPC file decompressing only the buffers of the fields a query needs.
 * A cold scan of one or two columns otherwise pays for inflating every column, the large string
 * dictionaries of id-like properties most of all. Arrow's file reader decompresses each record or
 * dictionary batch's buffers in one place (_decompressBuffers): this module gives one reader that
 * method's codec wrapped so that the buffers of other fields decode to zeros of their length (the
 * loader then builds their Data without anyone reading it). It touches apache-arrow internals that
 * have been stable since body compression arrived (v13); if they are not there, it reads the
 * whole file as before.
 */
import {
  DataType, RecordBatchReader, type Field, type RecordBatch, type Schema,
} from 'apache-arrow';

const NO_COMPRESSION = -1;
const LENGTH_PREFIX_BYTES = 8;

interface Codec {
  decode(bytes: Uint8Array): Uint8Array;
}

interface BufferRegion {
  readonly offset: number;
  readonly length: number;
}

/** The parts of apache-arrow's RecordBatchFileReaderImpl this module relies on. */
interface ReaderImpl {
  _readFooter(): { schema: Schema };
  _decompressBuffers(header: { buffers: readonly BufferRegion[] }, body: Uint8Array, codec: Codec): unknown;
  _loadDictionaryBatch(header: { id: number }, body: Uint8Array): unknown;
}

/** IPC buffers of a field of `type`, children included; null for a type this module does not know. */
function bufferCount(type: DataType): number | null {
  if (DataType.isNull(type)) return 0;
  if (DataType.isBool(type) || DataType.isInt(type) || DataType.isFloat(type) ||
    DataType.isTimestamp(type) || DataType.isDictionary(type)) return 2;
  if (DataType.isUtf8(type) || DataType.isBinary(type)) return 3;
  if (DataType.isList(type)) {
    const child = bufferCount(type.children[0].type);
    return child === null ? null : 2 + child;
  }
  return null;
}

/** The record batches of an Arrow file, with only `wanted` fields' buffers decompressed. */
export function readProjected(bytes: Uint8Array, wanted: (field: Field) => boolean): RecordBatch[] {
  const reader = RecordBatchReader.from(bytes);
  const impl = (reader as unknown as { _impl?: Partial<ReaderImpl> })._impl;
  if (!impl || typeof impl._readFooter !== 'function' || typeof impl._decompressBuffers !== 'function' ||
    typeof impl._loadDictionaryBatch !== 'function') {
    return reader.readAll();
  }
  const schema = impl._readFooter().schema;
  const mask: boolean[] = [];
  const dictionaries = new Set<number>();
  for (const field of schema.fields) {
    const count = bufferCount(field.type);
    if (count === null) return reader.readAll();
    const keep = wanted(field);
    for (let index = 0; index < count; index++) mask.push(keep);
    if (keep && DataType.isDictionary(field.type)) dictionaries.add(field.type.id);
  }
  const decompress = impl._decompressBuffers.bind(impl);
  const loadDictionary = impl._loadDictionaryBatch.bind(impl);
  let dictionary: number | null = null;
  impl._loadDictionaryBatch = (header, body) => {
    dictionary = header.id;
    try {
      return loadDictionary(header, body);
    } finally {
      dictionary = null;
    }
  };
  impl._decompressBuffers = (header, body, codec) => {
    const keep = (index: number) => (dictionary === null ? mask[index] !== false : dictionaries.has(dictionary));
    // The order in which Arrow calls decode: compressed, non-empty buffers, in buffer order.
    const calls: number[] = [];
    header.buffers.forEach(({ offset, length }, index) => {
      if (length === 0) return;
      const prefix = Buffer.from(body.buffer, body.byteOffset + offset, LENGTH_PREFIX_BYTES);
      const low = prefix.readInt32LE(0);
      const high = prefix.readInt32LE(4);
      if (low === NO_COMPRESSION && high === NO_COMPRESSION) return;
      calls.push(keep(index) ? -1 : low);
    });
    let call = 0;
    const projecting: Codec = {
      decode: (input) => {
        const skipLength = calls[call++];
        return skipLength === -1 ? codec.decode(input) : new Uint8Array(skipLength);
      },
    };
    return decompress(header, body, projecting);
  };
  return reader.readAll();
}
