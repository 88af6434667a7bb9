// The library's layers, checked on every `npm run lint` (and so on every `npm test`):
//   errors <- core (pure) <- amqp (broker I/O) <- pipeline (delivery steps) <- engine <- adapters
// where the adapters are nest/, transport/, health/, observability/, stores/, ops/ and testing/ (the test harness). No import points
// upward and nothing is imported in a circle. See docs/architecture.md.
// Text report: npx depcruise libs/amqp-retry/src --config .dependency-cruiser.cjs --output-type err-long
const SRC = '^libs/amqp-retry/src/';
const ADAPTERS = `${SRC}(nest|transport|health|observability|stores|ops|testing)/`;
const SPEC = '\\.spec\\.ts$';

// The rooms of each feature (docs/layout.md, "Where a feature lives"): its pure part is a folder of core/, its runtime
// files in engine/ and pipeline/ are named after it. A file in a room no feature claims fails the lint: add the
// feature (or its new file's prefix) here and to docs/layout.md's table in the same change.
const CORE_FOLDERS = [
  'breaker', 'config', 'connection', 'consumer', 'delivery', 'headers', 'idempotency', 'message', 'observe', 'ordering', 'outbox',
  'parking', 'partitions', 'publish', 'sql', 'text', 'time', 'topology',
];
const ENGINE_FILES = [
  // the centre: the façade, its sides, the handler runtime and the one chain
  'retry\\.engine', 'consuming\\.side', 'publishing\\.side', 'engine\\.views', 'shutdown\\.bound', 'handler\\.runtime',
  'delivery\\.chain', 'tier\\.retirement', 'reply-address\\.checker',
  // outage protection: the queue's flow (breaker, pause, rate limit) and pause/resume from other processes
  'queue-flow\\.control', 'rate-limit\\.gate', 'waiting\\.deliveries', 'control\\.side', 'control\\.listener',
  // delayed delivery, the outbox, partitions
  'delay\\.forwarding', 'outbox\\.[a-z]+', 'partitions?\\.[a-z]+',
  // the console's heartbeat
  'heartbeat\\.runtime',
];
const PIPELINE_FILES = ['delivery\\.(pipeline|contracts)', '[a-z-]+\\.steps?', 'delay\\.forwarder', 'in-place\\.retry'];
const notIn = (folder, names) => `^libs/amqp-retry/src/${folder}/(?!(${names.join('|')})(\\.spec)?\\.ts$)`;

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
      comment: 'amqp/ (connect, declare, consume, publish, ack) never imports the pipeline, the engine or an adapter (its unit tests may import the testing/ fixtures).',
      from: { path: `${SRC}amqp/` },
      to: { path: [`${SRC}(pipeline|engine)/`, ADAPTERS], pathNot: `${SRC}testing/[^/]+\\.fixture\\.ts$` },
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
    {
      name: 'core-folders-are-features',
      severity: 'error',
      comment: 'core/ has one folder per concept (docs/layout.md): a new one is added to CORE_FOLDERS and the layout table.',
      from: { path: `^libs/amqp-retry/src/core/(?!(${CORE_FOLDERS.join('|')})/)` },
      to: {},
    },
    {
      name: 'engine-files-name-their-feature',
      severity: 'error',
      comment: 'engine/ files are named after the feature they run (docs/layout.md, "Where a feature lives"): see ENGINE_FILES.',
      from: { path: notIn('engine', ENGINE_FILES) },
      to: {},
    },
    {
      name: 'pipeline-files-are-steps',
      severity: 'error',
      comment: 'pipeline/ holds the delivery pipeline, its contracts and its steps (`<name>.step.ts`, one middleware each).',
      from: { path: notIn('pipeline', PIPELINE_FILES) },
      to: {},
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
