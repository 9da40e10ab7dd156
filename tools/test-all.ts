/**
 * `npm test` and `npm run test:fast`: every check the project has, each reported as it finishes,
 * ending with one plain line "N passed, N failed" (N counts unit tests, tarball checks and
 * conformance cases as well as the whole-step checks), followed on the same line by
 * ", N skipped (reasons)" when a test was skipped — for want of a system tool, named by its title
 * (test/system-tools.testkit.ts), or by the test's own choice. Exits non-zero on any failure.
 *
 * - full (default): the build (when dist/ is stale), then every vitest file, four at a time, with the
 *   type-check, format and lint and drift checks beside it, the tarball test (pack, install offline
 *   into an empty project, run the bins and the library from there), the recipes of the README and
 *   the Getting Started page run verbatim from there (tools/tarball/recipes.ts), and the
 *   certification of the reference agent over stdio and WebSocket with the installed package's own bins
 *   (over stdio only the cases the README agent's certification in the docs step cannot prove).
 * - `--fast`: the build, then vitest's fast tier (TAP_TEST_TIER=fast: every `*.test.ts` that is not a
 *   `*.process`, `*.server`, `*.browser` or `*.slow` test: units and the in-memory conformance run,
 *   see vitest.config.ts) with the same checks beside them.
 *
 * `--skip <step>` leaves a step out (by the name printed before it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ALL_CASES } from '../conformance/cases/index.ts';
import { judgeRuns, RUNS } from './certify-judge.ts';
import { summaryLine } from './summary.ts';
import { allBlocks, recipesOf, runRecipe } from './tarball/recipes.ts';
import { type Installed, installBoth, runChecks } from './tarball/tarball.ts';
import { cpuSeconds, type Step, sh, together, tsx, vitest } from './test-steps.ts';

/**
 * How much lower than the run's own the priority of a step beside the run's longest is (nice(1)):
 * the checks that read the sources take the CPU the others leave, instead of slowing the tests and
 * the install on which the run's end waits.
 */
const BESIDE = 10;

/** The package installed alone (the certification runs from it), and with its optional peers (the docs run from it). */
let installed: Installed | undefined;
let withPeers: Installed | undefined;
/** The folder of the packed tarball both projects install. */
let packDir: string | undefined;

/** Packs, and installs into two empty projects at once, alone and with the optional peers: one check. */
const install: Step = {
  name: 'tarball: pack, and install offline into an empty project, alone and with its optional peers',
  run: async () => {
    try {
      ({ alone: installed, withPeers, packDir } = await installBoth());
    } catch (err) {
      console.error(`\n── tarball: FAIL ${(err as Error).message}`);
      return { passed: 0, failed: 1 };
    }
    return { passed: 1, failed: 0, note: `${(installed.packed.size / 1024).toFixed(0)} KiB, ${installed.packed.files.length} files` };
  },
};

/** The tarball checks of each installed project. */
const tarball: Step = {
  name: 'tarball: the packed package installed into an empty project, alone and with its optional peers',
  run: async () => {
    if (!installed || !withPeers) return { passed: 0, failed: 1, note: 'no installed package (the install step failed or was skipped)' };
    // Its lines are kept and printed together when it ends: vitest prints beside it.
    const lines: string[] = [];
    lines.push('  the package alone:');
    const alone = await runChecks(installed, (line) => lines.push(line));
    lines.push('  with its optional peers:');
    const peers = await runChecks(withPeers, (line) => lines.push(line));
    process.stdout.write(`\n── tarball:\n${lines.join('\n')}\n`);
    return { passed: alone.passed + peers.passed, failed: alone.failed + peers.failed };
  },
};

/**
 * The docs as tests: every recipe of README.md and the Getting Started page, run verbatim from the
 * installed package (tools/tarball/docs.ts), one after another (they share the ports they name).
 */
const docs: Step = {
  name: "docs: README's and Getting Started's commands, verbatim, from the installed package with its optional peers",
  run: async () => {
    if (!withPeers) return { passed: 0, failed: 1, note: 'no installed package (the tarball step failed or was skipped)' };
    const lines: string[] = [];
    let passed = 0;
    let failed = 0;
    try {
      for (const recipe of recipesOf(allBlocks())) {
        const r = await runRecipe(recipe, join(withPeers.dir, 'project'));
        lines.push(`${r.ok ? 'ok  ' : 'FAIL'} recipe ${recipe.name}`, ...r.lines);
        if (r.ok) passed++;
        else failed++;
      }
    } catch (err) {
      lines.push(`FAIL ${(err as Error).message}`);
      failed++;
    }
    process.stdout.write(`\n── docs:\n${lines.join('\n')}\n`);
    return { passed, failed };
  },
};

/**
 * tap-conform's options for the certification, which runs beside vitest: --time-scale 2 stretches
 * the harness's waits, and --jobs 4 (half the default) keeps down the agent starts it adds.
 */
const HARNESS_BESIDE_VITEST = ['--time-scale', '2', '--jobs', '4'];

/** The level line of a strict certification over stdio: a recipe whose step expects it certifies the whole suite there. */
const STDIO_CERTIFIED = /^Level: TAP \d+\.\d+ Certified over stdio/;

/**
 * The cases over stdio that only the reference agent's run proves: the stdio profile and the cases
 * of the stdio binding, with its state folder (the crash-and-restart cases). The rest of the suite
 * over stdio is the README's agent's certification in the docs step (`tap-conform -- node
 * agent.mjs`, a strict one: every case PASS but the restart cases, UNIMPLEMENTED for want of a
 * state folder); the reference agent is held to every case over WebSocket, with its state folder.
 */
const STDIO_ONLY = ALL_CASES.filter((c) => c.profile === 'stdio' || c.needs?.binding === 'stdio' || c.needs?.restart).map((c) => c.id);

/** Whether the docs step runs, with a recipe that certifies the whole suite over stdio. */
function docsCertifyStdio(skip: ReadonlySet<string>): boolean {
  return !skip.has(docs.name) && recipesOf(allBlocks()).some((r) => r.steps.some((s) => STDIO_CERTIFIED.test(s.test?.expect ?? '')));
}

/** Certifies the reference agent with the installed package's bins and counts the cases of its JSON reports. */
const certify = (skip: ReadonlySet<string>): Step => ({
  name: 'certification of the reference agent over stdio and WebSocket, from the installed package',
  run: async () => {
    if (!installed) return { passed: 0, failed: 1, note: 'no installed package (the tarball step failed or was skipped)' };
    const dir = mkdtempSync(join(tmpdir(), 'tap-certify-'));
    // Over stdio the whole suite runs once: the README's agent's in the docs step when it runs.
    const stdioElsewhere = docsCertifyStdio(skip);
    const only = stdioElsewhere ? STDIO_ONLY.flatMap((id) => ['--stdio-only', id]) : [];
    const code = await sh(
      process.execPath,
      [
        '--import',
        'tsx',
        'tools/certify-reference.ts',
        '--package',
        installed.pkg,
        '--reports',
        dir,
        ...only,
        '--',
        ...HARNESS_BESIDE_VITEST,
      ],
      {},
      true,
    );
    // The reference is held to every case, not just to certification (conformance/report/model.ts):
    // over WebSocket across its runs (the security profile runs once per kind of credential), a case
    // must pass in one of them and fail or error in none.
    const { passed, failed, lines } = judgeRuns(dir, RUNS, stdioElsewhere ? ['stdio'] : []);
    for (const line of lines) console.error(`  ${line}`);
    rmSync(dir, { recursive: true, force: true });
    return {
      passed,
      failed: code !== 0 && failed === 0 ? 1 : failed,
      ...(stdioElsewhere
        ? { note: `over stdio ${STDIO_ONLY.length} cases; the whole suite is the README agent's run in the docs step` }
        : {}),
    };
  },
});

/** dist/ first (a no-op when it is current, as after npm ci): the tests, the type-check and the tarball use it. */
const build = together('build', [tsx('tools/build.ts')]);

/**
 * The checks that read the sources and start nothing, side by side with their output kept until
 * each ends: they run beside vitest, whose files mostly wait on processes and sockets. In the full
 * run they go at a lower priority (BESIDE): it ends with vitest and with the install,
 * certification and docs, not with them.
 */
const statics = (niceness: number): Step =>
  together(
    'type-check, format and lint, drift: schemas, schema bundle, requirement index, requirement coverage, errata',
    [
      // Incremental: a second run in a clone checks only what changed (about 7 s instead of 25).
      ['npx', ['tsc', '--noEmit', '-p', 'tsconfig.json', '--incremental', '--tsBuildInfoFile', 'node_modules/.cache/tap/tsc.tsbuildinfo']],
      ['npx', ['biome', 'ci', '--diagnostic-level=error', '.']],
      tsx('tools/emit-schemas.ts', '--check'),
      tsx('tools/emit-schema-bundle.ts', '--check'),
      tsx('tools/requirements.ts', '--check'),
      tsx('tools/spec-1-1.ts', '--check'),
      tsx('tools/check-coverage.ts'),
      tsx('tools/check-errata.ts'),
    ],
    true,
    niceness,
  );

/**
 * A stage is one step, or lanes run at once, each lane one step or several in order; a group of
 * steps inside a lane runs at once. The tarball and the certification from it mostly wait on
 * processes (npm, the agents' handshakes and the suite's timed cases): run beside vitest, whose
 * files mostly wait too, they use the CPU that vitest leaves idle instead of adding their minute
 * and a half at the end.
 */
type Lane = Step | Array<Step | Step[]>;
type Stage = Step | Lane[];

/**
 * After the install, the docs' recipes, the tarball checks and the certification at once, beside
 * vitest: the docs' certifications run as the README gives them, with the harness's own waits
 * (stall-aware: conformance/stall-aware.ts); the reference's certification stretches its waits,
 * and over stdio runs only the cases the docs cannot prove. With the docs first and the other two
 * after them, this lane took 330 s of a 338 s run (install 62 s, docs 193 s, then 74 s); beside
 * each other, 258 s of a 304 s run.
 */
export const full = (skip: ReadonlySet<string> = new Set()): Stage[] => [
  build,
  [vitest('vitest: every test file, four at a time'), statics(BESIDE), [install, [docs, tarball, certify(skip)]]],
];
export const FAST: Stage[] = [
  build,
  [vitest('vitest: the fast tier (units and the in-memory conformance run)', [], { TAP_TEST_TIER: 'fast' }), statics(0)],
];

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { skip: { type: 'string', multiple: true, default: [] }, fast: { type: 'boolean' } } });
  const skip = new Set(values.skip);
  const started = Date.now();
  let passed = 0;
  let failed = 0;
  const skipped: Record<string, number> = {};
  const lines: string[] = [];
  try {
    for (const stage of values.fast ? FAST : full(skip)) {
      // A lane is steps in order; a group of steps inside a lane runs at once.
      const lanes = (Array.isArray(stage) ? stage : [stage])
        .map((lane) =>
          (Array.isArray(lane) ? lane : [lane])
            .map((group) => (Array.isArray(group) ? group : [group]).filter((step) => !skip.has(step.name)))
            .filter((group) => group.length > 0),
        )
        .filter((lane) => lane.length > 0);
      if (lanes.length === 0) continue;
      const named = (lane: Step[][]) => lane.map((group) => group.map((step) => step.name).join(' and, at once, ')).join(', then ');
      console.log(`\n── ${lanes.map(named).join('\n── and beside it: ')}`);
      const timed = async (step: Step) => {
        const t0 = Date.now();
        const r = await step.run();
        return { step, r, secs: ((Date.now() - t0) / 1000).toFixed(1) };
      };
      const results = (
        await Promise.all(
          lanes.map(async (lane) => {
            const done = [];
            for (const group of lane) done.push(...(await Promise.all(group.map(timed))));
            return done;
          }),
        )
      ).flat();
      for (const { step, r, secs } of results) {
        passed += r.passed;
        failed += r.failed;
        for (const [reason, n] of Object.entries(r.skipped ?? {})) skipped[reason] = (skipped[reason] ?? 0) + n;
        lines.push(
          `${r.failed === 0 ? 'ok  ' : 'FAIL'} ${step.name}: ${r.passed} passed, ${r.failed} failed${r.note ? ` (${r.note})` : ''} in ${secs} s`,
        );
      }
    }
  } finally {
    for (const dir of [installed?.dir, withPeers?.dir, packDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  }
  const cpu = cpuSeconds();
  console.log(
    `\n${lines.join('\n')}\nin ${((Date.now() - started) / 1000).toFixed(0)} s${cpu === undefined ? '' : `, ${cpu.toFixed(0)} s of CPU`}`,
  );
  console.log(summaryLine(passed, failed, skipped));
  return failed === 0 ? 0 : 1;
}

process.exit(await main());
