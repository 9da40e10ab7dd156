/**
 * `npm run build` (also run by `prepack`, and first by certify, test and bench): compiles the shipped sources to dist/ —
 * JavaScript, .d.ts declarations and source maps — with tsconfig.build.json, then bundles each
 * command's compiled modules into dist/bin/<command>/ (see BINS). Skips the compile
 * when dist/ is newer than every input; `--force` compiles anyway, from nothing, and `--check`
 * only says whether dist/ is current (exit 1 when it is not). A compile after an earlier one is
 * incremental: TypeScript checks and emits again what changed since (a change to one module,
 * about 4 s instead of 16), and what dist/ holds of a source that is gone is removed.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { build as bundle } from 'esbuild';
import ts from 'typescript';
import { emitValidators, MODULES_DIR } from './emit-validators.ts';

const root = new URL('..', import.meta.url).pathname;
/** Everything the build reads: the compiled folders, the JSON they import, and the build's own settings. */
const INPUTS = [
  'reference',
  'conformance',
  'schemas/src',
  'schemas/v1',
  'tools/gen-types',
  'tools/emit-validators.ts',
  'tools/build.ts',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
];
/** Generated modules the compile does not emit: written from schemas/v1 first, then copied beside the compiled core. */
const GENERATED = ['reference/core/validators.generated.js', 'reference/core/validators.generated.d.ts', `reference/core/${MODULES_DIR}`];
const STAMP = join(root, 'dist', '.built');
/** What the last compile knew, for the next to start from; removed with dist/ by a compile from nothing. */
const BUILD_INFO = join(root, 'node_modules/.cache/tap/build.tsbuildinfo');

/**
 * The commands bundled from the compiled modules into one file each (plus chunks for the parts
 * loaded only when used). The reference agent is started for every stdio session a harness opens,
 * and most of its start-up went to resolving and reading a few hundred module files; tap-conform
 * loads every case's module at each run (1.0 → 0.85 CPU-s for a run of one case). The other
 * commands start once per use and keep the per-module layout of dist/.
 * Dependencies stay outside the bundle, imported from node_modules.
 */
export const BINS: Record<string, { entry: string }> = {
  'tap-reference-agent': { entry: 'dist/reference/agents/reference-agent.js' },
  'tap-conform': { entry: 'dist/conformance/cli.js' },
};

/** How every bundle is made: ES modules for Node 20, shared code in chunks, dependencies left in node_modules, maps to the sources. */
const BUNDLE = {
  bundle: true,
  splitting: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
} as const;

/**
 * Bundles each command of BINS into dist/bin/<command>/main.js, with a source map back to the
 * sources. The validators' module loads its folder of compiled validators from beside itself, so
 * the folder is copied beside each bundled file that holds that module.
 */
export async function bundleBins(): Promise<void> {
  for (const [name, from] of Object.entries(BINS)) {
    const outdir = join(root, 'dist/bin', name);
    await bundle({ ...BUNDLE, entryPoints: { main: join(root, from.entry) }, outdir, entryNames: 'main' });
    copyValidatorsBeside(outdir, name);
  }
}

/**
 * The library's entries, from package.json's `exports`: each subpath whose `types` is a compiled
 * declaration of dist/ is bundled from the module beside that declaration into `dist/lib/<name>.js`
 * (`index` for the main entry), which its `default` names. A program that imports the package
 * (every stdio agent, started once per case by tap-conform) then reads a few files instead of a
 * few hundred. The entries are bundled together, so the modules they share are one chunk and one
 * instance (a CapabilityError from `./agent` is the one `.` exports); the declarations stay per
 * module.
 */
export function libraryEntries(): Record<string, string> {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { main?: string; exports: Record<string, unknown> };
  const main = (manifest.exports['.'] as { default?: unknown } | undefined)?.default;
  if (manifest.main !== main) throw new Error(`package.json main must be ${String(main)}, the default of exports["."]`);
  const entries: Record<string, string> = {};
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const types = (target as { types?: unknown }).types;
    if (typeof types !== 'string' || !types.startsWith('./dist/')) continue;
    const name = subpath === '.' ? 'index' : subpath.slice(2);
    const bundled = `./dist/lib/${name}.js`;
    if ((target as { default?: unknown }).default !== bundled)
      throw new Error(`package.json exports["${subpath}"].default must be ${bundled} (the bundle of ${types})`);
    entries[name] = join(root, types.replace(/\.d\.ts$/, '.js'));
  }
  return entries;
}

/** Bundles the library's entries (libraryEntries) into dist/lib/, the validators' folder beside the chunk that loads it. */
export async function bundleLibrary(): Promise<void> {
  const outdir = join(root, 'dist/lib');
  await bundle({ ...BUNDLE, entryPoints: libraryEntries(), outdir });
  copyValidatorsBeside(outdir, 'the library');
}

/** Copies the compiled validators' folder beside each bundled file that loads it. */
function copyValidatorsBeside(outdir: string, what: string): void {
  const holders = jsFiles(outdir).filter((file) => readFileSync(file, 'utf8').includes(`./${MODULES_DIR}/`));
  if (holders.length === 0) throw new Error(`the bundle of ${what} does not hold the validators' module`);
  for (const file of holders) cpSync(join(root, 'reference/core', MODULES_DIR), join(dirname(file), MODULES_DIR), { recursive: true });
}

function jsFiles(dir: string): string[] {
  return filesUnder(dir).filter((file) => file.endsWith('.js'));
}

/** Test files and test folders, which tsconfig.build.json leaves out of dist/: a change to one needs no new build. */
const isTest = (name: string, isDirectory: boolean) => (isDirectory ? name === 'test' : name.endsWith('.test.ts'));

/** The newest modification time under `path`, test files and test folders left out. */
export function newestInput(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (isTest(entry.name, entry.isDirectory())) continue;
    newest = Math.max(newest, newestInput(join(path, entry.name)));
  }
  return newest;
}

/** True when dist/ was built after the last change to any input. */
export function isBuilt(): boolean {
  if (!existsSync(STAMP)) return false;
  const built = statSync(STAMP).mtimeMs;
  return INPUTS.every((input) => newestInput(join(root, input)) <= built);
}

/**
 * Compiles dist/: from nothing when `fresh` or when no compile finished before, else from the last
 * compile (see the top of this file). Throws with the compiler's output when it fails.
 */
export async function build(fresh = false): Promise<void> {
  const started = Date.now();
  const dist = join(root, 'dist');
  const incremental = !fresh && existsSync(STAMP) && existsSync(BUILD_INFO);
  if (incremental) {
    // Not current until it ends; the bundles are made again whole.
    for (const made of [STAMP, join(dist, 'bin'), join(dist, 'lib')]) rmSync(made, { recursive: true, force: true });
  } else {
    rmSync(dist, { recursive: true, force: true });
    rmSync(BUILD_INFO, { force: true });
  }
  emitValidators();
  compile();
  if (incremental && !pruned(dist)) return build(true);
  for (const file of GENERATED) cpSync(join(root, file), join(dist, file), { recursive: true });
  await bundleBins();
  await bundleLibrary();
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  const how = incremental ? 'compiled again from the last compile' : 'compiled';
  console.log(`build: dist/ ${how} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Runs tsc over tsconfig.build.json, keeping what it knows in BUILD_INFO for the next compile. */
function compile(): void {
  const args = ['-p', 'tsconfig.build.json', '--incremental', '--tsBuildInfoFile', BUILD_INFO];
  const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), ...args], { cwd: root, encoding: 'utf8' });
  if (tsc.status !== 0) throw new Error(`the compile failed:\n${tsc.stdout}${tsc.stderr}`);
}

/**
 * After an incremental compile: removes what dist/ holds of a module no longer compiled (its
 * JavaScript, map and declarations) or of a JSON file that is gone, and says whether every
 * compiled module has its output (false: something removed them, and the compile must start over).
 */
function pruned(dist: string): boolean {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.build.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!config) throw new Error('tsconfig.build.json could not be read');
  // Declarations among the inputs (the validators' own) are read, not compiled.
  const compiled = config.fileNames.filter((file) => !file.endsWith('.d.ts'));
  const modules = new Set(compiled.map((file) => file.slice(root.length).replace(/\.ts$/, '')));
  for (const file of filesUnder(dist)) {
    const path = file.slice(dist.length + 1);
    if (leftOver(path, modules, (p) => existsSync(join(root, p)))) rmSync(file);
  }
  return [...modules].every((m) => existsSync(join(dist, `${m}.js`)) && existsSync(join(dist, `${m}.d.ts`)));
}

/**
 * Whether a file of dist/ (`path`, inside dist/) is left over from a module no longer among the
 * compiled `modules` (paths without `.ts`), or from a JSON file that no longer `exists`. The
 * bundles, the generated validators and the stamp are not the compile's.
 */
export function leftOver(path: string, modules: ReadonlySet<string>, exists: (path: string) => boolean): boolean {
  if (/^(?:bin|lib)\//.test(path) || path === '.built' || GENERATED.some((g) => path === g || path.startsWith(`${g}/`))) return false;
  const module = path.match(/^(.*)\.(?:js|js\.map|d\.ts)$/)?.[1];
  if (module !== undefined) return !modules.has(module);
  return path.endsWith('.json') && !exists(path);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { force: { type: 'boolean' }, check: { type: 'boolean' } } });
  if (values.check) {
    const ok = isBuilt();
    console.log(ok ? 'build: dist/ is current' : 'build: dist/ is missing or older than its sources (run npm run build)');
    process.exit(ok ? 0 : 1);
  }
  if (!values.force && isBuilt()) {
    console.log('build: dist/ is current');
    process.exit(0);
  }
  try {
    await build(values.force === true);
  } catch (err) {
    console.error(`build: ${(err as Error).message}`);
    process.exit(1);
  }
}
