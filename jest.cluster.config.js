// The cluster test (npm run test:cluster): its own config, so that `npm test` never runs it; it needs the 3-node
// cluster of scripts/cluster.sh, which scripts/test-cluster.sh starts and always stops.
import config, { leakGuard } from './jest.config.js';

const { displayName: _unit, testMatch: _unitMatch, ...shared } = config.projects[0];

export default {
  ...shared,
  ...leakGuard,
  displayName: 'cluster',
  testMatch: ['<rootDir>/test/cluster/**/*.cluster-spec.ts'],
  testTimeout: 600_000,
};
