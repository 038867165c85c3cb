/**
 * Dependency rules, checked by `.ci/run` before the tests (`npx depcruise engine server`, with
 * the known violations of .dependency-cruiser-known-violations.json ignored, so the list can only
 * shrink). Type-only imports count (tsPreCompilationDeps): a cycle closed by a type import is a
 * cycle of the design all the same.
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
      comment: 'Every import resolves to a file or a declared package.',
      from: {},
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
