/**
 * The tarball test: what users get is the packed package, not the repository. Packs it, installs
 * the tarball into an empty project from the local npm cache (--offline: no network), and from
 * there, with the installed package only, runs the bins, the type generators, the two-way type check
 * of the installed types and the generated ones (type-world.ts), the README's library example
 * (type-checked with tsc, then run), a plain .mjs consumer, and checks that no
 * run-time import resolves outside `dependencies` and that nothing was written inside the package;
 * and the documents as an installed user has them: the README's links and imports, the shipped spec
 * site, and the spec links of a tap-conform report (./doc-checks.ts).
 * `installBoth` leaves the two projects for the certify step; `npm run test:tarball` runs it alone.
 */
import { builtinModules } from 'node:module';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { documentChecks } from './doc-checks.ts';
import { type Check, ok, run, snapshot } from './run.ts';
import { missingPeerChecks, peerChecks } from './peers.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  bin: Record<string, string>;
  repository?: unknown;
};

/** What `npm pack` made. */
export interface Packed {
  tarball: string;
  integrity: string;
  size: number;
  unpackedSize: number;
  files: string[];
}

/** The installed project: its folder, the package's folder inside it, the bins' folder, and whether the optional peers are in. */
export interface Installed {
  dir: string;
  pkg: string;
  bin: string;
  packed: Packed;
  peers: boolean;
}

/** The optional peer dependencies (package.json peerDependenciesMeta), at the versions this repository tests. */
export function optionalPeers(): Record<string, string> {
  return Object.fromEntries(Object.keys(MANIFEST.peerDependencies).map((name) => [name, MANIFEST.devDependencies[name]!]));
}

/** Packs the package (prepack builds dist/ when it is stale) into `dest`. */
export async function pack(dest: string): Promise<Packed> {
  const r = ok(await run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: ROOT, timeoutMs: 300_000 }), 'npm pack');
  const start = r.stdout.indexOf('[');
  const [info] = JSON.parse(r.stdout.slice(start)) as {
    filename: string;
    integrity: string;
    size: number;
    unpackedSize: number;
    files: { path: string }[];
  }[];
  return {
    tarball: join(dest, info!.filename),
    integrity: info!.integrity,
    size: info!.size,
    unpackedSize: info!.unpackedSize,
    files: info!.files.map((f) => f.path),
  };
}

interface LockEntry {
  version: string;
  integrity?: string;
  resolved?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

/**
 * The consumer's lock file: the tarball, and the entries of this repository's own lock file that
 * the package's dependencies (and the consumer's TypeScript) need, at the same places, each with
 * where its tarball came from. With it, `npm install --offline` takes every package from the
 * cache that `npm ci` filled, by integrity, and needs no registry metadata.
 */
export function consumerLock(tarball: string, integrity: string, extra: Record<string, string>, registry: string): unknown {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const own = lock.packages[''] as LockEntry;
  const packages: Record<string, LockEntry> = {};
  // Node's lookup: a package at `from` finds `name` in its own node_modules, then in each parent's.
  const locate = (from: string, name: string): string | undefined => {
    for (let base = from; ; base = base.slice(0, Math.max(0, base.lastIndexOf('/node_modules/')))) {
      const path = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (lock.packages[path]) return path;
      if (!base) return undefined;
    }
  };
  const add = (from: string, name: string, optional = false): void => {
    const path = locate(from, name);
    if (!path) {
      if (optional) return;
      throw new Error(`package-lock.json has no entry for ${name} (needed by ${from || 'the package'})`);
    }
    if (packages[path]) return;
    const { dev, devOptional, peer, ...entry } = lock.packages[path]!;
    const bare = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const file = bare.slice(bare.lastIndexOf('/') + 1);
    packages[path] = { ...entry, resolved: entry.resolved ?? `${registry.replace(/\/$/, '')}/${bare}/-/${file}-${entry.version}.tgz` };
    for (const dep of Object.keys(entry.dependencies ?? {})) add(path, dep);
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) add(path, dep, true);
  };
  for (const dep of Object.keys(MANIFEST.dependencies)) add('', dep);
  for (const dep of Object.keys(extra)) add('', dep);
  const file = `file:${tarball}`;
  return {
    name: 'tap-consumer',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'tap-consumer', dependencies: { [MANIFEST.name]: file, ...extra } },
      [`node_modules/${MANIFEST.name}`]: {
        version: MANIFEST.version,
        resolved: file,
        integrity,
        license: own.license,
        dependencies: MANIFEST.dependencies,
        peerDependencies: own.peerDependencies,
        peerDependenciesMeta: own.peerDependenciesMeta,
        // package.json's, not the lock's copy, which `npm install` refreshes only when run.
        bin: MANIFEST.bin,
        engines: own.engines,
      },
      ...packages,
    },
  };
}

/**
 * Installs the packed package into a fresh project, with the TypeScript the consumer test
 * compiles with; `peers` installs the optional peers beside it (NATS, TypeScript types).
 */
async function prepareInstalled(o: { peers?: boolean; packed: Packed }): Promise<Installed> {
  const dir = mkdtempSync(join(tmpdir(), 'tap-tarball-'));
  const packed = o.packed;
  const project = join(dir, 'project');
  mkdirSync(project);
  const dev = MANIFEST.devDependencies;
  const extra = { typescript: dev.typescript!, '@types/node': dev['@types/node']!, ...(o.peers ? optionalPeers() : {}) };
  const manifest = {
    name: 'tap-consumer',
    private: true,
    type: 'module',
    dependencies: { [MANIFEST.name]: `file:${packed.tarball}`, ...extra },
  };
  writeFileSync(join(project, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  const registry = ok(await run('npm', ['config', 'get', 'registry'], { cwd: project }), 'npm config get registry').stdout.trim();
  const lock = consumerLock(packed.tarball, packed.integrity, extra, registry);
  writeFileSync(join(project, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
  ok(
    await run('npm', ['install', '--offline', '--no-audit', '--no-fund'], { cwd: project, timeoutMs: 300_000 }),
    'npm install --offline of the tarball',
  );
  return {
    dir,
    pkg: join(project, 'node_modules', MANIFEST.name),
    bin: join(project, 'node_modules', '.bin'),
    packed,
    peers: o.peers === true,
  };
}

/** The package installed both ways a user installs it, and the folder of the tarball both took. */
export interface InstalledBoth {
  alone: Installed;
  withPeers: Installed;
  packDir: string;
}

/**
 * Packs once and installs the tarball into two empty projects at once: alone (stdio, WebSocket,
 * tap-conform) and with its optional peers. Each install mostly waits on npm's files, so the two
 * overlap. On a failure it removes what it made before it throws.
 */
export async function installBoth(): Promise<InstalledBoth> {
  const packDir = mkdtempSync(join(tmpdir(), 'tap-pack-'));
  const settled = await pack(packDir)
    .then((packed) => Promise.allSettled([prepareInstalled({ packed }), prepareInstalled({ peers: true, packed })]))
    .catch((err: unknown) => [{ status: 'rejected' as const, reason: err }]);
  const [alone, withPeers] = settled;
  if (alone?.status === 'fulfilled' && withPeers?.status === 'fulfilled')
    return { alone: alone.value, withPeers: withPeers.value, packDir };
  for (const r of settled) if (r.status === 'fulfilled') rmSync(r.value.dir, { recursive: true, force: true });
  rmSync(packDir, { recursive: true, force: true });
  throw (settled.find((r): r is PromiseRejectedResult => r.status === 'rejected') as PromiseRejectedResult).reason;
}

/** The bare specifiers the package's compiled JavaScript imports, statically or dynamically, by file. */
export function bareImports(distDir: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  // Static imports and re-exports at the start of a line, side-effect imports, and dynamic import() of a literal.
  const patterns = [
    /^\s*(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gm,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.js')) {
        const text = readFileSync(p, 'utf8');
        for (const m of patterns.flatMap((re) => [...text.matchAll(re)])) {
          const spec = m[1]!;
          if (spec.startsWith('.') || spec.startsWith('/')) continue;
          const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
          found.set(pkg, [...(found.get(pkg) ?? []), relative(distDir, p)]);
        }
      }
    }
  };
  walk(distDir);
  return found;
}

/** The bare imports that are neither Node built-ins nor run-time or optional peer dependencies: each would crash an installed package. */
export function importsOutsideDependencies(distDir: string): string[] {
  const builtins = new Set(builtinModules);
  const deps = new Set([...Object.keys(MANIFEST.dependencies), ...Object.keys(MANIFEST.peerDependencies)]);
  return [...bareImports(distDir)]
    .filter(([pkg]) => !pkg.startsWith('node:') && !builtins.has(pkg) && !deps.has(pkg) && pkg !== MANIFEST.name)
    .map(([pkg, files]) => `${pkg} (imported by ${files.slice(0, 3).join(', ')}${files.length > 3 ? ', …' : ''})`);
}

/** The checks against an installed project; each resolves with a note or throws with the reason. */
export function checks(inst: Installed): Check[] {
  const project = join(inst.dir, 'project');
  const bin = (name: string) => join(inst.bin, name);
  const before = snapshot(inst.pkg);
  return [
    [
      'the tarball ships what users need and nothing else',
      async () => {
        const files = inst.packed.files;
        for (const need of [
          'LICENSE',
          'CHANGELOG.md',
          'README.md',
          'package.json',
          'asyncapi.yaml',
          'dist/conformance/cli.js',
          'dist/bin/tap-reference-agent/main.js',
          'schemas/v1/message.schema.json',
          'spec/1.0/index.md',
          'spec/1.1/index.md',
          'site/index.html',
          'site/spec/tasks.html',
          // TAP 1.1 is the current text of the site, 1.0 sits under 1.0/ with its errata.
          'site/spec/changes.html',
          'site/spec/1.1/requirements.json',
          'site/1.0/index.html',
          'site/1.0/spec/tasks.html',
          'site/errata.html',
          'site/assets/search-index.js',
        ])
          if (!files.includes(need)) throw new Error(`${need} is missing`);
        const stray = files.filter(
          (f) =>
            /^(test|bench|tools|\.ci|fixtures\/agents)\//.test(f) ||
            (/\.ts$/.test(f) && !f.endsWith('.d.ts')) ||
            // Test support and the demos, which run from a clone (tsconfig.build.json leaves them out).
            /\.testkit\./.test(f) ||
            /^dist\/reference\/agents\/([a-z]+-)?demo\//.test(f),
        );
        if (stray.length) throw new Error(`ships ${stray.length} files users do not need: ${stray.slice(0, 5).join(', ')}`);
        if (!readFileSync(join(inst.pkg, 'LICENSE'), 'utf8').includes('Apache License'))
          throw new Error('LICENSE is not the Apache-2.0 text');
        return `${(inst.packed.size / 1024).toFixed(0)} KiB packed, ${(inst.packed.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${files.length} files`;
      },
    ],
    [
      'every run-time import resolves to a dependency, an optional peer or a Node built-in',
      async () => {
        const outside = importsOutsideDependencies(join(inst.pkg, 'dist'));
        if (outside.length) throw new Error(`imports outside dependencies: ${outside.join('; ')}`);
        return `${bareImports(join(inst.pkg, 'dist')).size} packages imported`;
      },
    ],
    [
      'tap-conform --version and --list run from the installed bins',
      async () => {
        const v = ok(await run(bin('tap-conform'), ['--version'], { cwd: project }), 'tap-conform --version');
        if (!v.stdout.includes(MANIFEST.version)) throw new Error(`--version printed "${v.stdout.trim()}"`);
        const l = ok(await run(bin('tap-conform'), ['--list'], { cwd: project }), 'tap-conform --list');
        const n = Number(/(\d+) cases\s*$/.exec(l.stdout)?.[1] ?? 0);
        if (n < 200) throw new Error(`--list printed ${n} cases`);
        return `${n} cases listed`;
      },
    ],
    [
      'tapctl gen-types writes Python, Go and Rust types (TypeScript needs its optional peer: ./peers.ts)',
      async () => {
        const counts: string[] = [];
        for (const lang of ['python', 'go', 'rust']) {
          const out = join(project, `types-${lang}`);
          ok(await run(bin('tapctl'), ['gen-types', '--lang', lang, '--out', out], { cwd: project }), `tapctl gen-types --lang ${lang}`);
          const files = readdirSync(out);
          if (files.length === 0) throw new Error(`gen-types --lang ${lang} wrote nothing`);
          counts.push(`${lang}: ${files.join(', ')}`);
        }
        return counts.join('; ');
      },
    ],
    [
      'tapctl workspace init makes a workspace',
      async () => {
        ok(await run(bin('tapctl'), ['workspace', 'init', 'ws'], { cwd: project }), 'tapctl workspace init');
        const s = ok(await run(bin('tapctl'), ['workspace', 'status', 'ws', '--json'], { cwd: project }), 'tapctl workspace status');
        JSON.parse(s.stdout);
        return undefined;
      },
    ],
    [
      'a plain .mjs consumer runs a task, reads a data table and runs conformance cases',
      async () => {
        copyFileSync(join(ROOT, 'tools/tarball/consumer.mjs'), join(project, 'consumer.mjs'));
        copyFileSync(join(ROOT, 'tools/tarball/consumer-agent.mjs'), join(project, 'agent.js'));
        const r = ok(await run(process.execPath, ['consumer.mjs'], { cwd: project, timeoutMs: 120_000 }), 'node consumer.mjs');
        return r.stdout.trim();
      },
    ],
    ...documentChecks({ pkg: inst.pkg, project, bin, repository: MANIFEST.repository }),
    [
      'nothing was written inside the installed package',
      async () => {
        const after = snapshot(inst.pkg);
        const changed = [...after.keys()].filter((f) => before.get(f) !== after.get(f));
        const gone = [...before.keys()].filter((f) => !after.has(f));
        if (changed.length || gone.length) throw new Error(`changed: ${[...changed, ...gone].slice(0, 5).join(', ')}`);
        return `${after.size} files unchanged`;
      },
    ],
  ];
}

/** Runs every check, printing a line each; resolves with the counts. */
export async function runChecks(inst: Installed, print: (line: string) => void = console.log): Promise<{ passed: number; failed: number }> {
  let passed = 0;
  let failed = 0;
  for (const [name, check] of inst.peers ? peerChecks(inst) : [...checks(inst), ...missingPeerChecks(inst)]) {
    const t0 = Date.now();
    try {
      const note = await check();
      passed++;
      print(`  ok   ${name}${note ? ` — ${note}` : ''} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    } catch (err) {
      failed++;
      print(`  FAIL ${name}: ${(err as Error).message}`);
    }
  }
  return { passed, failed };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const t0 = Date.now();
  let both: InstalledBoth | undefined;
  let result = { passed: 0, failed: 1 };
  try {
    // The ways a user installs: the package alone (stdio, WebSocket, tap-conform), and with its optional peers.
    both = await installBoth();
    const { alone, withPeers } = both;
    console.log(`tarball: installed ${alone.packed.tarball} alone into ${join(alone.dir, 'project')}`);
    console.log(`tarball: installed it with its optional peers into ${join(withPeers.dir, 'project')}`);
    result = await runChecks(alone);
    const more = await runChecks(withPeers);
    result = { passed: result.passed + more.passed, failed: result.failed + more.failed };
  } catch (err) {
    console.error(`tarball: ${(err as Error).message}`);
  } finally {
    if (both && process.env.TAP_KEEP_TARBALL !== '1')
      for (const dir of [both.alone.dir, both.withPeers.dir, both.packDir]) rmSync(dir, { recursive: true, force: true });
  }
  console.log(`tarball: ${result.passed} passed, ${result.failed} failed in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(result.failed === 0 ? 0 : 1);
}
