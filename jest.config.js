// ESM throughout: Nest 12 ships as ES modules, so tests run under node --experimental-vm-modules.
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  // Builds (dist/) hold copies of the package's package.json, which Jest's module map would find twice.
  modulePathIgnorePatterns: ['<rootDir>/libs/amqp-retry/dist/'],
  moduleNameMapper: {
    '^nestjs-amqp-retry$': '<rootDir>/libs/amqp-retry/src/index.ts',
    '^nestjs-amqp-retry/health$': '<rootDir>/libs/amqp-retry/src/health/index.ts',
    '^nestjs-amqp-retry/transport$': '<rootDir>/libs/amqp-retry/src/transport/index.ts',
    '^nestjs-amqp-retry/testing$': '<rootDir>/libs/amqp-retry/src/testing/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

// A socket or server a test file leaves open would keep the in-band run alive for ever after its last test (a CI step
// that never returns): forceExit ends the run, and the open-handles reporter names what was left open.
export const leakGuard = {
  forceExit: true,
  reporters: ['default', '<rootDir>/test/support/open-handles.reporter.mjs'],
};

/**
 * The e2e files that run alone (project e2e-serial, in band), never beside another file: they change what every file
 * shares (the handler registry, the shared delay ladder, the CLI's build), start private RabbitMQ nodes, load the
 * machine on purpose, or time the broker tightly enough that a second test process on the same two cores would make
 * them flaky. Every other e2e file uses names of its own and may run beside another (project e2e, two workers in
 * scripts/test-e2e.sh). docs/testing.md says why each is here.
 */
export const SERIAL_E2E = [
  'test/ops/parked-messages.e2e-spec.ts', // drains and deletes the handler registry
  'test/ops/registry-readers.e2e-spec.ts', // counts what the registry holds
  'test/ops/parked-scope.e2e-spec.ts',
  'test/ops/dashboard-access.e2e-spec.ts',
  'test/configuration/configuration.e2e-spec.ts', // deletes the shared default delay ladder
  'test/ops/parked-cli.e2e-spec.ts', // the four that build and run the CLI
  'test/observability/credential-masking.e2e-spec.ts',
  'test/outage-protection/queue-control.e2e-spec.ts',
  'test/transport/transport-replay.e2e-spec.ts',
  'test/delays/delayed-delivery.e2e-spec.ts', // private nodes, and lateness within 200-300 ms
  'test/reliability/blocked-publishers.e2e-spec.ts',
  'test/reliability/consumer-timeout.e2e-spec.ts',
  'test/outage-protection/outage.e2e-spec.ts', // 100 messages a second for half a minute, and bounds on it
  'test/retry-flow/retry-flow.e2e-spec.ts', // tier gaps within 250 ms
  'test/transport/transport.e2e-spec.ts',
  'test/partitions/partitions.e2e-spec.ts', // hand-overs within 1 s
  'test/partitions/transport-partitions.e2e-spec.ts',
];

export default {
  ...leakGuard,
  testTimeout: 60000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/src/**/*.spec.ts'] },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...SERIAL_E2E.map((path) => `<rootDir>/${path}`)],
    },
    { ...shared, displayName: 'e2e-serial', testMatch: SERIAL_E2E.map((path) => `<rootDir>/${path}`) },
    // Restarts the broker and kills connections: never beside other tests (npm test runs in band).
    { ...shared, displayName: 'chaos', testMatch: ['<rootDir>/test/chaos/**/*.chaos-spec.ts'] },
  ],
};
