/** Types for snappyjs (pure-JS raw snappy), which ships none. */
declare module 'snappyjs' {
  const snappy: {
    uncompress(input: Uint8Array, maxLength?: number): Uint8Array;
    compress(input: Uint8Array): Uint8Array;
  };
  export default snappy;
}
