// The public API of each entry of the package (`nestjs-amqp-retry`, `/transport`, `/health`, `/testing`), as API Extractor's
// reports in libs/amqp-retry/api/, checked in: a change to the public API shows in review as a change to a report.
//   node scripts/api-report.mjs --check   (npm run api:check)  fails when a report differs from the build's API
//   node scripts/api-report.mjs --update  (npm run api:update) rewrites the reports from the build's API
// Both first write the declarations of the package's ESM build (tsconfig.lib.json, as scripts/build-lib.mjs builds
// dist/esm, declarations only) to dist/api-report/dist/esm, and read each entry's there (the reports name the files
// as dist/esm/..., as in the package); the entries are those of package.json's `exports`, so a new entry gets its
// report without editing this script.
import { Extractor, ExtractorConfig, ExtractorLogLevel } from '@microsoft/api-extractor';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';

const mode = process.argv[2];
if (mode !== '--check' && mode !== '--update') {
  console.error('usage: node scripts/api-report.mjs --check | --update');
  process.exit(2);
}
const update = mode === '--update';
const root = join(import.meta.dirname, '..');
const libDir = join(root, 'libs', 'amqp-retry');
const reportFolder = join(libDir, 'api');
const tempFolder = join(libDir, 'dist', 'api-report');
const packageJson = JSON.parse(readFileSync(join(libDir, 'package.json'), 'utf8'));

const ESM_OUT = './dist/esm/';
const dtsFolder = join(tempFolder, ESM_OUT);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(tempFolder, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(libDir, 'tsconfig.lib.json'), '--emitDeclarationOnly', '--outDir', dtsFolder], { stdio: 'inherit' });

const entries = Object.entries(packageJson.exports)
  .filter(([, target]) => typeof target === 'object' && target.import?.types?.startsWith(ESM_OUT))
  .map(([subpath, target]) => ({
    name: subpath === '.' ? packageJson.name : `${packageJson.name}/${subpath.slice(2)}`,
    // nestjs-amqp-retry.api.md, nestjs-amqp-retry.transport.api.md, ...
    reportFileName: subpath === '.' ? packageJson.name : `${packageJson.name}.${subpath.slice(2).replaceAll('/', '.')}`,
    types: join(dtsFolder, target.import.types.slice(ESM_OUT.length)),
  }));

mkdirSync(reportFolder, { recursive: true });
copyFileSync(join(libDir, 'package.json'), join(tempFolder, 'package.json'));
const changed = [];
let failed = false;
for (const entry of entries) {
  const config = ExtractorConfig.prepare({
    // The package's folder, for API Extractor, is dist/api-report (a copy of its package.json is there): the reports
    // then name the declaration files dist/esm/..., as the package has them, wherever they were written.
    configObjectFullPath: join(tempFolder, 'api-extractor.json'),
    packageJsonFullPath: join(tempFolder, 'package.json'),
    configObject: {
      projectFolder: tempFolder,
      mainEntryPointFilePath: entry.types,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            target: 'ES2022',
            lib: ['ES2022'],
            types: ['node'],
            strict: true,
            experimentalDecorators: true,
            skipLibCheck: true,
          },
          files: [entry.types],
        },
      },
      apiReport: { enabled: true, reportFileName: entry.reportFileName, reportFolder, reportTempFolder: tempFolder },
      docModel: { enabled: false },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        compilerMessageReporting: { default: { logLevel: 'warning' } },
        extractorMessageReporting: {
          default: { logLevel: 'warning' },
          // A type that an entry uses without exporting it: listed in the report (so that it shows in review), and
          // not an error, since /transport and /health use types that the main entry exports.
          'ae-forgotten-export': { logLevel: 'none', addToApiReportFile: true },
          // No @public/@beta release tags: every export of an entry is public (docs/versioning.md).
          'ae-missing-release-tag': { logLevel: 'none' },
          // Whether each export is documented, and whether its comment's links resolve, is TypeDoc's check (npm run
          // docs, typedoc.json's validation); the comments are written for TypeDoc, which reads braces and '@' in prose
          // as text where TSDoc's stricter syntax wants them escaped.
          'ae-undocumented': { logLevel: 'none', addToApiReportFile: false },
        },
        tsdocMessageReporting: { default: { logLevel: 'none' } },
      },
    },
  });
  const reportPath = join(reportFolder, `${entry.reportFileName}.api.md`);
  const existed = existsSync(reportPath);
  const result = Extractor.invoke(config, {
    localBuild: update,
    messageCallback: (message) => {
      // Whether a report changed, was missing or was written is told below, with the command that settles it.
      if (message.messageId.startsWith('console-api-report-')) message.logLevel = ExtractorLogLevel.None;
      // Said for each entry: the analysis runs on API Extractor's own TypeScript, whatever the project's is.
      if (message.messageId === 'console-preamble' || message.messageId === 'console-compiler-version-notice') {
        message.logLevel = ExtractorLogLevel.None;
      }
    },
  });
  if (result.errorCount > 0 || result.warningCount > 0) {
    failed = true;
    console.error(`${entry.name}: API Extractor reported ${result.errorCount} error(s) and ${result.warningCount} warning(s), above`);
  }
  if (result.apiReportChanged || !existed) changed.push({ entry, reportPath });
}

const rel = (path) => relative(root, path);
if (update) {
  for (const { entry, reportPath } of changed) console.log(`${entry.name}: wrote ${rel(reportPath)}`);
  if (changed.length === 0) console.log(`the API reports in ${rel(reportFolder)} are current`);
} else if (changed.length > 0) {
  for (const { entry, reportPath } of changed) {
    const built = join(tempFolder, `${entry.reportFileName}.api.md`);
    console.error(`\nThe public API of ${entry.name} differs from ${rel(reportPath)}:`);
    try {
      const expected = existsSync(reportPath) ? rel(reportPath) : '/dev/null';
      execFileSync('git', ['diff', '--no-index', '--no-color', '--', expected, rel(built)], { cwd: root, stdio: 'inherit' });
    } catch {
      // git diff exits 1 when the files differ: the diff is printed
    }
  }
  console.error(
    '\nThe public API changed without its report. If the change is meant, run `npm run api:update` and commit ' +
      `${rel(reportFolder)}/ with it (a change that removes or alters an export is breaking: docs/versioning.md).`,
  );
  failed = true;
} else {
  console.log(`the public API matches the reports in ${rel(reportFolder)} (${entries.map((e) => e.name).join(', ')})`);
}
// The temporary folder holds a copy of the package's package.json: left in the tree, Jest's module map would find the
// package twice (and fail every test file with "dupMap.get is not a function").
rmSync(tempFolder, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
