/**
 * The import graph of the house: every relative import of every non-test module of each checked
 * folder (TREES: reference/, conformance/, tools/ and bench/), checked against that folder's
 * declared layers (and, inside a folder with a declared order such as reference/agent, its file
 * order) so that every arrow points down, with no circle and no module over 400 lines.
 * ARCHITECTURE.md says why; this file is the source of the layers and the orders, and
 * reference/import-graph.test.ts checks the whole house. `npx tsx tools/import-graph.ts` prints
 * every violation and exits 1 when there is one.
 *
 * Rules. A test file (`*.test.ts`) is exempt from every rule: it may import anything. A testkit (a
 * module of test support, named `*.testkit.ts`) takes part in the circle check and may import any
 * layer, but no shipped module may import it; the modules of tools/ and bench/ and the demos of
 * reference/agents are not shipped and may. Every other module may import only its own layer or a
 * lower one of its folder, a file declared lower in its folder's order, and the folders its tree
 * names as below it (reference/ stands on schemas/ alone; conformance/ on reference/ and schemas/;
 * tools/ and bench/ on the whole package). A module in no declared layer, or missing from its
 * folder's order, is reported. Only the loader of an optional peer imports it for its values
 * (tools/optional-peers.ts).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { type Edge, findCycles, type Graph } from './import-cycles.ts';
import { importsOf, listModules } from './module-imports.ts';
import { optionalPeerViolations } from './optional-peers.ts';

/** reference/ bottom-up; a module's layer is the first entry whose prefix its path (under the folder) starts with. */
export const LAYERS: readonly (readonly string[])[] = [
  ['core/', 'package.ts', 'peers.ts'],
  ['transports/', 'crypto.ts', 'trust.ts', 'telemetry.ts', 'task-scope.ts'],
  // Monitoring: health, metrics and the audit trail, beside any agent or runner.
  ['ops/'],
  ['agent/', 'client/'],
  ['workspace/', 'jetstream/', 'mesh/'],
  // An agent process: its command line, bindings, durable queues and signals.
  ['serve/'],
  // Bridges to other protocols, each an agent process of its own.
  ['bridges/'],
  ['agents/', 'tapctl/', 'index.ts'],
];

/** reference/agent bottom-up: a file may import only files before it. */
export const AGENT_ORDER: readonly string[] = [
  // The data model, then the public face for capability authors.
  'model.ts',
  'handler.ts',
  // Tables and helpers.
  'duplicates.ts',
  'deadlines.ts',
  'liveness.ts',
  'outbound.ts',
  'fingerprint.ts',
  'ended-queue.ts',
  'tasks.ts',
  'new-task.ts',
  'sessions.ts',
  'journal.ts',
  'options.ts',
  'jwt.ts',
  'environment.ts',
  'signals.ts',
  'integrity.ts',
  'input-schemas.ts',
  'monitor.ts',
  'runtime.ts',
  'journal-limits.ts',
  'table-limits.ts',
  // Behaviour against narrow interfaces: plans and the task context use a TaskHost ...
  'task-host.ts',
  'plans.ts',
  'input.ts',
  'context.ts',
  'task-runner.ts',
  // ... requests, handshake and shutdown a Replier.
  'replier.ts',
  'shutdown.ts',
  'shares.ts',
  'listing.ts',
  'grants.ts',
  'requests.ts',
  'handshake.ts',
  'recovery.ts',
  'credentials.ts',
  // The connection, then the agent.
  'inbound.ts',
  'forged-frames.ts',
  'session.ts',
  'monitoring.ts',
  'conformance-capabilities.ts',
  'agent.ts',
  'index.ts',
];

/**
 * tools/ bottom-up: the libraries other tools use, the site and the build, the tarball test, and
 * the commands (each run by an npm script or another tool).
 */
export const TOOLS_LAYERS: readonly (readonly string[])[] = [
  [
    'emit-validators.ts',
    'requirements/',
    'errata/',
    'fixtures/',
    'soak/',
    'gen-types/',
    'summary.ts',
    'listening-agent.ts',
    'module-imports.ts',
    'import-cycles.ts',
    'certify-judge.ts',
    'test-order.ts',
    'test-steps.ts',
  ],
  ['optional-peers.ts'],
  ['site/', 'build.ts'],
  ['tarball/'],
  [
    'certify-bridges.ts',
    'certify-reference.ts',
    'check-coverage.ts',
    'check-errata.ts',
    'emit-schema-bundle.ts',
    'emit-schemas.ts',
    'import-graph.ts',
    'mutation.ts',
    'requirements.ts',
    'soak.ts',
    'spec-1-1.ts',
    'test-all.ts',
    'validate-fixtures.ts',
    'vitest-build.ts',
  ],
];

/**
 * conformance/ bottom-up, one entry a layer: an entry is a file or a folder (ending in "/"), a
 * module's entry is the first that names it, and a module may import only modules of its own entry
 * or an earlier one (a case file, what cases/ holds).
 */
export const CONFORMANCE_ORDER: readonly string[] = [
  // Values and tables: where files are, verdicts, the requirement index, schemas, keys, tokens, transcripts.
  'paths.ts',
  'verdict.ts',
  'requirements.ts',
  'errata.ts',
  'schemas.ts',
  'versions.ts',
  'mac.ts',
  'tokens.ts',
  'x509.ts',
  'session-state.ts',
  'transcript.ts',
  'judge/',
  'leftovers.ts',
  // Reaching an agent, and what the harness saw of it: targets, frames, waits, silences, the peer.
  'nats-processes.ts',
  'nats-binding-check.ts',
  'target.ts',
  'wait-listening.ts',
  'stall-aware.ts',
  'findings.ts',
  'inspect.ts',
  'load.ts',
  'waits.ts',
  'silence.ts',
  'peer.ts',
  'fault-layer.ts',
  'tidy.ts',
  // What a case is written with: steps, its context, the case itself, the probe, the models of properties.
  'steps.ts',
  'context.ts',
  'case.ts',
  'probe.ts',
  'models/',
  // Mutants of the reference agent: the layer, its operators, the rows of each chapter, the broken agent of tools/mutation.ts.
  'mutation/layer.ts',
  'mutation/operators.ts',
  'mutation/rows.ts',
  'mutation/mutants/',
  'mutation/mutants.ts',
  'mutation/broken-agent.ts',
  // The command line and the run's credentials, running cases, and the engines some cases run on.
  'options.ts',
  'usage.ts',
  'credentials.ts',
  'runner.ts',
  'property-runs.ts',
  'chaos.ts',
  'select.ts',
  'report/text.ts',
  'report/links.ts',
  'report/model.ts',
  // The cases: cases/<profile>/<chapter>.<section>.ts, each profile's index, and cases/index.ts.
  'cases/',
  // Reports of a run, the workspace binding's own suite, the run and the command line.
  'report/',
  'workspace/',
  'run.ts',
  'index.ts',
  'cli.ts',
];

/** bench/ bottom-up: the protocol pieces the peers share, the library, the peers and scenarios, the commands. */
export const BENCH_LAYERS: readonly (readonly string[])[] = [
  ['peers/bare-protocol.ts', 'peers/mcp-echo.ts'],
  ['lib/'],
  ['peers/', 'scenarios/'],
  ['run.ts', 'profile.ts', 'profile-top.ts', 'durable-requests.ts'],
];

/** One checked folder: its layers, the declared file orders inside it, and what stands below it. */
export interface Tree {
  /** The folder, from the repository root, ending in "/". */
  folder: string;
  layers: readonly (readonly string[])[];
  /** Sub-folders (under `folder`, ending in "/") whose files import only files declared before them. */
  orders: Readonly<Record<string, readonly string[]>>;
  /** Folders outside it (from the repository root) that its modules may import. */
  below: readonly string[];
  /** Prefixes (under `folder`) of modules that are not shipped and may use test support; "" for the whole folder. */
  unshipped: readonly string[];
}

/** The checked folders. */
export const TREES: readonly Tree[] = [
  {
    folder: 'reference/',
    layers: LAYERS,
    orders: { 'agent/': AGENT_ORDER },
    below: ['schemas/'],
    // The demos run from a clone (npm run demo, demo:workspace, demo:mesh); tsconfig.build.json leaves them out.
    unshipped: ['agents/demo/', 'agents/workspace-demo/', 'agents/mesh-demo/'],
  },
  {
    folder: 'conformance/',
    layers: CONFORMANCE_ORDER.map((entry) => [entry]),
    orders: {},
    // tap-conform drives the reference library's transports and reads the schemas; it never reaches into tools/.
    below: ['reference/', 'schemas/'],
    unshipped: [],
  },
  {
    folder: 'tools/',
    layers: TOOLS_LAYERS,
    orders: {},
    below: ['reference/', 'conformance/', 'schemas/', 'test/', 'package.json'],
    unshipped: [''],
  },
  {
    folder: 'bench/',
    layers: BENCH_LAYERS,
    orders: {},
    below: ['dist/', 'reference/', 'conformance/', 'schemas/'],
    unshipped: [''],
  },
];

/** A module of test support: named `*.testkit.ts`. */
export const isTestkit = (path: string): boolean => path.endsWith('.testkit.ts');

/** The most lines a module (not a test, not a testkit) may have (ARCHITECTURE.md: split before a file grows). */
export const MAX_LINES = 400;

/** Folds a path from the repository root: "reference/../tools/x.ts" becomes "tools/x.ts". */
function fold(path: string): string {
  return posix.normalize(path.split('\\').join('/'));
}

/**
 * Reads every non-test module under `root`, the folder `folder` of the repository (reference/ by
 * default), and its relative imports; paths are from the repository root.
 */
export function readGraph(root: string, folder = 'reference/'): Graph {
  const modules = new Map<string, { edges: Edge[]; lines: number }>();
  for (const inside of listModules(root, root, [])) {
    const text = readFileSync(join(root, inside), 'utf8');
    const from = folder + inside;
    const edges = importsOf(inside, text).map(({ spec, typeOnly }) => ({
      from,
      to: fold(folder + relative(root, resolve(root, dirname(inside), spec))),
      typeOnly,
    }));
    modules.set(from, { edges, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) });
  }
  return { folder, modules };
}

/** The tree a folder is checked as (reference/ for an unknown one). */
export function treeOf(folder: string): Tree {
  return TREES.find((t) => t.folder === folder) ?? (TREES[0] as Tree);
}

/** The layer of a module (path from the repository root) in its tree, or -1 when it is in none. */
export function layerOf(path: string, tree: Tree = TREES[0] as Tree): number {
  if (!path.startsWith(tree.folder)) return -1;
  const inside = path.slice(tree.folder.length);
  return tree.layers.findIndex((prefixes) => prefixes.some((p) => (p.endsWith('/') ? inside.startsWith(p) : inside === p)));
}

/** Where a module stands in its folder's declared order: undefined outside an ordered folder, -1 when undeclared. */
function rankOf(path: string, tree: Tree): { folder: string; rank: number } | undefined {
  for (const [folder, order] of Object.entries(tree.orders)) {
    const prefix = tree.folder + folder;
    if (!path.startsWith(prefix) || path.slice(prefix.length).includes('/')) continue;
    return { folder, rank: order.indexOf(path.slice(prefix.length)) };
  }
  return undefined;
}

/** True for a module that is not shipped (tools/, bench/, the demos): it may use test support. */
const unshipped = (path: string, tree: Tree): boolean => tree.unshipped.some((p) => path.startsWith(tree.folder + p));

/** Every rule broken in the graph (of the folder it was read as), one line each, naming the files. */
export function violations(graph: Graph): string[] {
  const tree = treeOf(graph.folder);
  const out: string[] = [];
  for (const { members, loop } of findCycles(graph)) {
    out.push(`import circle among ${members.length} files (${members.join(', ')}); one loop: ${[...loop, loop[0]].join(' → ')}`);
  }
  for (const [from, { edges, lines }] of graph.modules) {
    const testkit = isTestkit(from);
    if (lines > MAX_LINES && !testkit) out.push(`${from} has ${lines} lines, more than ${MAX_LINES}: split it by spec noun`);
    const fromLayer = layerOf(from, tree);
    if (fromLayer < 0 && !testkit) {
      out.push(`${from} is in no declared layer: add it to the layers of ${tree.folder} in tools/import-graph.ts`);
      continue;
    }
    const fromRank = rankOf(from, tree);
    if (fromRank?.rank === -1 && !testkit) {
      out.push(
        `${from} is not in the declared order of ${tree.folder}${fromRank.folder}: declare where it stands in tools/import-graph.ts`,
      );
    }
    for (const edge of edges) {
      const to = edge.to;
      const arrow = `${from} → ${to}${edge.typeOnly ? ' (types)' : ''}`;
      if (isTestkit(to)) {
        if (!testkit && !unshipped(from, tree)) out.push(`shipped module imports test support: ${arrow}`);
        continue;
      }
      if (!to.startsWith(tree.folder)) {
        if (tree.below.some((b) => to.startsWith(b))) continue;
        out.push(`import out of ${tree.folder}: ${arrow}; a module of ${tree.folder} must not reach into ${to.split('/')[0]}/`);
        continue;
      }
      if (testkit) continue;
      const toLayer = layerOf(to, tree);
      if (toLayer > fromLayer) {
        out.push(`upward import: ${arrow} (layer ${tree.layers[fromLayer]?.join(' ')} imports layer ${tree.layers[toLayer]?.join(' ')})`);
        continue;
      }
      const toRank = rankOf(to, tree);
      if (fromRank && toRank && fromRank.folder === toRank.folder && fromRank.rank >= 0 && toRank.rank >= fromRank.rank) {
        const name = (p: string) => p.slice(tree.folder.length + fromRank.folder.length);
        out.push(
          `upward import inside ${tree.folder}${fromRank.folder}: ${arrow} (the declared order puts ${name(to)} at or above ${name(from)})`,
        );
      }
    }
  }
  return out;
}

/** Every violation in the checked folders of the repository at `repoRoot`. */
export function houseViolations(repoRoot: string): string[] {
  return [...TREES.flatMap((tree) => violations(readGraph(join(repoRoot, tree.folder), tree.folder))), ...optionalPeerViolations(repoRoot)];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const found = houseViolations(new URL('../', import.meta.url).pathname);
  for (const line of found) console.log(line);
  const folders = TREES.map((t) => t.folder).join(', ');
  console.log(found.length === 0 ? `import graph of ${folders}: every arrow points down` : `import graph: ${found.length} violations`);
  process.exit(found.length === 0 ? 0 : 1);
}
