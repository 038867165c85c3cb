/**
 * Dependency rules, checked by `.ci/run` before the tests (`npm run check`). Type-only imports
 * count (tsPreCompilationDeps): a cycle closed by a type import is a cycle of the design all the
 * same. There is none today, and none may come.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules form no import cycle, type-only imports included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'engine-not-to-server',
      severity: 'error',
      comment: 'The engine is a library: it never imports the server (HTTP, Kafka).',
      from: { path: '^engine/' },
      to: { path: '^server/' },
    },
    {
      name: 'no-test-code-in-production',
      severity: 'error',
      comment: 'Production code imports no test code (test/ is not shipped).',
      from: { path: '^(engine|server)/' },
      to: { path: '^test/' },
    },
    {
      name: 'server-through-the-engine-face',
      severity: 'error',
      comment: 'The server reaches the engine through engine/index.ts only.',
      from: { path: '^server/' },
      to: { path: '^engine/', pathNot: '^engine/index\\.ts$' },
    },
    {
      name: 'http-and-kafka-apart',
      severity: 'error',
      comment: 'The HTTP layer and the Kafka broker do not import each other.',
      from: { path: '^server/http/' },
      to: { path: '^server/kafka/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'Every import resolves to a file or a declared package (the CommonJS door loads the '
        + 'compiled engine from dist/, which a fresh clone has only after a build).',
      from: { pathNot: '^engine/index\\.cjs$' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.cjs', '.json'] },
  },
};
