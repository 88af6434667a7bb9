// Boots the compiled application under plain Node (not Jest) and reports which build of the library it loaded: a
// CommonJS app must get dist/cjs, once, and never the ES module build beside it.
import 'reflect-metadata';
import { runScenario, expectedOutcome } from './shared/scenario';
import { isDeepStrictEqual } from 'node:util';

async function main(): Promise<void> {
  const outcome = await runScenario();
  const builds = Object.keys(require.cache).filter((file) => /nestjs-amqp-retry[\\/]dist[\\/]\w+[\\/]index\.js$/.test(file));
  console.log(JSON.stringify({ outcome, builds }));
  if (!isDeepStrictEqual(outcome, expectedOutcome)) throw new Error('unexpected outcome');
  if (builds.length !== 1 || !/dist[\\/]cjs[\\/]/.test(builds[0]))
    throw new Error(`loaded ${builds.join(', ') || 'no build'}: expected dist/cjs once`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
