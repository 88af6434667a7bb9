// ESM throughout: Nest 12 ships as ES modules, so tests run under node --experimental-vm-modules.
const shared = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  moduleNameMapper: {
    '^nestjs-amqp-retry$': '<rootDir>/libs/amqp-retry/src/index.ts',
    '^nestjs-amqp-retry/health$': '<rootDir>/libs/amqp-retry/src/health/index.ts',
    '^nestjs-amqp-retry/transport$': '<rootDir>/libs/amqp-retry/src/transport/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
};

export default {
  testTimeout: 60000,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/libs/**/*.spec.ts', '<rootDir>/src/**/*.spec.ts'] },
    { ...shared, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'] },
    // Restarts the broker and kills connections: never beside other tests (npm test runs in band).
    { ...shared, displayName: 'chaos', testMatch: ['<rootDir>/test/chaos/**/*.chaos-spec.ts'] },
  ],
};
