/** The error every decoder of compressed batches throws, and the checks they share. */
export class DecompressError extends Error {
  override name = 'DecompressError';
}

export function tooLarge(total: number, outputBytesMax: number): DecompressError {
  return new DecompressError(`decompressed more than ${outputBytesMax} bytes (${total} so far)`);
}

export function declaredTooLarge(declared: number | bigint, outputBytesMax: number): DecompressError {
  return new DecompressError(`a frame declares ${declared} bytes of content, more than ${outputBytesMax}`);
}

export function need(input: Buffer, at: number, bytes: number, what: string): void {
  if (at + bytes > input.length) throw new DecompressError(`truncated ${what}`);
}
