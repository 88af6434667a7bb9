// The soak test (npm run test:soak): its own config, so that `npm test` never runs it; it runs SOAK_MINUTES
// (default 30, CI 3) on a private RabbitMQ node of its own.
import config, { leakGuard } from './jest.config.js';

const { displayName: _unit, testMatch: _unitMatch, ...shared } = config.projects[0];
const minutes = Number(process.env.SOAK_MINUTES ?? 30);

export default {
  ...shared,
  ...leakGuard,
  displayName: 'soak',
  testMatch: ['<rootDir>/test/soak/**/*.soak-spec.ts'],
  // The run itself, plus a private node's start (a 4.x chroot may be made the first time) and the final drain.
  testTimeout: (minutes * 60 + 900) * 1000,
};
