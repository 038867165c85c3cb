// The members of ua-parser-js 1.x (MIT; 2.x is AGPL) that ua-parser.ts uses; 1.x has no types.
declare module 'ua-parser-js' {
  interface UAParserInstance {
    setUA(ua: string): UAParserInstance;
    getDevice(): { type?: string; vendor?: string; model?: string };
    getBrowser(): { name?: string; version?: string };
    getOS(): { name?: string; version?: string };
  }
  const UAParser: { new (): UAParserInstance };
  export default UAParser;
}
