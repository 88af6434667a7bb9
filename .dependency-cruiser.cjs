// The library's layers, checked on every `npm run lint` (and so on every `npm test`):
//   errors <- core (pure) <- amqp (broker I/O) <- pipeline (delivery steps) <- engine <- adapters
// where the adapters are nest/, transport/, health/, observability/, stores/, ops/ and testing/ (the test harness). No import points
// upward and nothing is imported in a circle. See docs/architecture.md.
// Text report: npx depcruise libs/amqp-retry/src --config .dependency-cruiser.cjs --output-type err-long
const SRC = '^libs/amqp-retry/src/';
const ADAPTERS = `${SRC}(nest|transport|health|observability|stores|ops|testing)/`;
const SPEC = '\\.spec\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle ties layers together so that none can be read, tested or changed alone.',
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: 'errors-are-a-leaf',
      severity: 'error',
      comment: 'errors/ holds one error class per file and imports nothing of the library but other errors.',
      from: { path: `${SRC}errors/` },
      to: { path: SRC, pathNot: `${SRC}errors/` },
    },
    {
      name: 'core-imports-only-core-and-errors',
      severity: 'error',
      comment: 'core/ is pure: it imports only core/ and errors/ (its unit tests also the testing/ fixtures).',
      from: { path: `${SRC}core/`, pathNot: SPEC },
      to: { path: SRC, pathNot: `${SRC}(core|errors)/` },
    },
    {
      name: 'core-does-no-io',
      severity: 'error',
      comment: 'core/ does no I/O: of Node only buffer, crypto and perf_hooks; of packages only their types.',
      from: { path: `${SRC}core/`, pathNot: SPEC },
      to: { dependencyTypes: ['core'], pathNot: '^(node:)?(buffer|crypto|perf_hooks)$' },
    },
    {
      name: 'core-uses-only-package-types',
      severity: 'error',
      comment: 'core/ may name a package\'s types (amqplib\'s ConsumeMessage) but never run its code.',
      from: { path: `${SRC}core/`, pathNot: SPEC },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-peer', 'npm-optional'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'amqp-moves-bytes-only',
      severity: 'error',
      comment: 'amqp/ (connect, declare, consume, publish, ack) never imports the pipeline, the engine or an adapter.',
      from: { path: `${SRC}amqp/` },
      to: { path: [`${SRC}(pipeline|engine)/`, ADAPTERS] },
    },
    {
      name: 'pipeline-below-engine',
      severity: 'error',
      comment: 'pipeline/ (the delivery steps) never imports the engine or an adapter.',
      from: { path: `${SRC}pipeline/` },
      to: { path: [`${SRC}engine/`, ADAPTERS] },
    },
    {
      name: 'engine-below-adapters',
      severity: 'error',
      comment: 'engine/ never imports an adapter (nest, transport, health, observability, stores, ops).',
      from: { path: `${SRC}engine/` },
      to: { path: ADAPTERS },
    },
    {
      name: 'fixtures-only-in-tests',
      severity: 'error',
      comment: 'testing/ holds the test harness (the nestjs-amqp-retry/testing entry) and fixtures for unit tests; the library itself never imports them.',
      from: { path: SRC, pathNot: [SPEC, `${SRC}testing/`] },
      to: { path: `${SRC}testing/` },
    },
    {
      name: 'entries-are-not-imported',
      severity: 'error',
      comment: 'index.ts files are the package\'s entry points; importing one from inside the library makes cycles.',
      from: { path: SRC },
      to: { path: `${SRC}(index|[a-z]+/index)\\.ts$` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
