/**
 * The import graph of reference/: every relative import of every non-test module, checked against
 * a declared order of layers (and, inside reference/agent, of files) so that every arrow points
 * down, with no circle, and no shipped module over 400 lines. `npx tsx tools/import-graph.ts`
 * prints every violation and exits 1 when there is one.
 *
 * Rules. Below every layer stand the schemas (schemas/), which any module may import; the agents
 * started by the conformance suite (reference/agents/) may also import conformance/; nothing may
 * import tools/ or anything else outside reference/. A test file (`*.test.ts`) is exempt from every rule: it may import anything. A testkit
 * (a module of test support named in TESTKITS) takes part in the circle check and may import any
 * layer, but no shipped module may import it. Every other module may import only its own layer or
 * a lower one, and inside reference/agent only a file declared lower in AGENT_ORDER.
 *
 * conformance/ is checked the same way against its own declared order, CONFORMANCE_ORDER.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** Layers bottom-up; a module's layer is the first entry whose prefix its path (under reference/) starts with. */
export const LAYERS: readonly (readonly string[])[] = [
  ['core/', 'package.ts'],
  ['transports/', 'crypto.ts', 'trust.ts'],
  // The registry of a mesh, below the agent, which loads it (lazily) to join one.
  ['mesh/semver.ts', 'mesh/entry.ts', 'mesh/registry.ts', 'mesh/member.ts'],
  ['agent/', 'client/'],
  ['workspace/', 'jetstream/', 'mesh/'],
  // An agent process: its command line, bindings, durable queues and signals.
  ['serve/'],
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
  'tasks.ts',
  'sessions.ts',
  'journal.ts',
  'options.ts',
  'environment.ts',
  'signals.ts',
  'integrity.ts',
  'input-schemas.ts',
  'runtime.ts',
  'journal-limits.ts',
  // Behaviour against narrow interfaces: plans and the task context use a TaskHost ...
  'task-host.ts',
  'plans.ts',
  'context.ts',
  'task-runner.ts',
  // ... requests, handshake and shutdown a Replier.
  'replier.ts',
  'requests.ts',
  'handshake.ts',
  'shutdown.ts',
  'recovery.ts',
  // The connection, then the agent.
  'inbound.ts',
  'session.ts',
  'conformance-capabilities.ts',
  'agent.ts',
  'index.ts',
];

/** Modules of test support, used by tests and by the agents started for testing. */
export const TESTKITS: readonly string[] = [
  'core/testkit.ts',
  'core/handshake.testkit.ts',
  'transports/testing.ts',
  'agent/test-peer.ts',
  'client/scripted-agent.ts',
  'workspace/testing.ts',
  'workspace/test-agent.ts',
  'mesh/testing.ts',
  'workspace/test-mailbox-peer.ts',
];

/** The most lines a shipped module of reference/ may have (STYLE.md: split before a file grows). */
export const MAX_LINES = 400;

/** One relative import: from a module to a module, both as paths under reference/. */
export interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** The parsed modules of reference/: each non-test module with its relative imports and its length. */
export interface Graph {
  modules: Map<string, { edges: Edge[]; lines: number }>;
}

function listModules(dir: string, base: string, out: string[]): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) listModules(path, base, out);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) {
      out.push(relative(base, path).split('\\').join('/'));
    }
  }
  return out;
}

function importsOf(file: string, text: string): { spec: string; typeOnly: boolean }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const found: { spec: string; typeOnly: boolean }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      found.push({ spec: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ spec: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ spec: node.arguments[0].text, typeOnly: false });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ spec: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((i) => i.spec.startsWith('.'));
}

/** Reads every non-test module under `root` (the reference/ folder) and its relative imports. */
export function readGraph(root: string): Graph {
  const modules = new Map<string, { edges: Edge[]; lines: number }>();
  for (const from of listModules(root, root, [])) {
    const text = readFileSync(join(root, from), 'utf8');
    const edges = importsOf(from, text).map(({ spec, typeOnly }) => ({
      from,
      to: relative(root, resolve(root, dirname(from), spec))
        .split('\\')
        .join('/'),
      typeOnly,
    }));
    modules.set(from, { edges, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) });
  }
  return { modules };
}

/** The layer of a module (index into LAYERS), or -1 when its path is outside reference/ or undeclared. */
export function layerOf(path: string): number {
  return LAYERS.findIndex((prefixes) => prefixes.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p)));
}

function agentRank(path: string): number | undefined {
  if (!path.startsWith('agent/') || path.slice('agent/'.length).includes('/')) return undefined;
  return AGENT_ORDER.indexOf(path.slice('agent/'.length));
}

/** Every import circle: each set of modules that reach one another, with one loop through it to follow. */
export function findCycles(graph: Graph): { members: string[]; loop: string[] }[] {
  // Tarjan's strongly connected components; every component of two or more is a circle.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const strong = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.modules.get(v)?.edges ?? []) {
      if (!graph.modules.has(to)) continue;
      if (!indices.has(to)) {
        strong(to);
        low.set(v, Math.min(low.get(v) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(v, Math.min(low.get(v) as number, indices.get(to) as number));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const self = graph.modules.get(v)?.edges.some((e) => e.to === v);
      if (component.length > 1 || self) components.push(component.sort());
    }
  };
  for (const v of [...graph.modules.keys()].sort()) if (!indices.has(v)) strong(v);
  return components.map((members) => ({ members, loop: shortestLoop(graph, members) }));
}

/** One loop through a strongly connected component, as the path a reader can follow. */
function shortestLoop(graph: Graph, component: string[]): string[] {
  const members = new Set(component);
  const start = component[0] as string;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift() as string;
    for (const { to } of graph.modules.get(v)?.edges ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const loop = [v];
        while (loop[0] !== start) loop.unshift(previous.get(loop[0] as string) as string);
        return loop;
      }
      if (!previous.has(to) && to !== start) {
        previous.set(to, v);
        queue.push(to);
      }
    }
  }
  return component;
}

/** Every rule broken in the graph, one line each, naming the files. */
export function violations(graph: Graph): string[] {
  const out: string[] = [];
  for (const { members, loop } of findCycles(graph)) {
    const path = [...loop, loop[0]].map((f) => `reference/${f}`).join(' → ');
    out.push(`import circle among ${members.length} files (${members.join(', ')}); one loop: ${path}`);
  }
  for (const [from, { edges, lines }] of graph.modules) {
    if (lines > MAX_LINES && !TESTKITS.includes(from)) {
      out.push(`reference/${from} has ${lines} lines, more than ${MAX_LINES}: split it by spec noun`);
    }
    const fromLayer = layerOf(from);
    if (fromLayer < 0) {
      out.push(`reference/${from} is in no declared layer: add its folder to LAYERS in tools/import-graph.ts`);
      continue;
    }
    const fromRank = agentRank(from);
    if (fromRank === -1 && !TESTKITS.includes(from)) {
      out.push(`reference/${from} is not in AGENT_ORDER: declare where it stands in tools/import-graph.ts`);
    }
    const testkit = TESTKITS.includes(from);
    for (const edge of edges) {
      const to = edge.to;
      const arrow = `reference/${from} → reference/${to}${edge.typeOnly ? ' (types)' : ''}`;
      if (to.startsWith('../')) {
        const folder = to.split('/')[1] ?? '';
        if (folder === 'schemas' || (folder === 'conformance' && from.startsWith('agents/'))) continue;
        out.push(`import out of reference/: ${arrow}; a shipped module must not reach into ${folder}/`);
        continue;
      }
      if (TESTKITS.includes(to) && !testkit) {
        out.push(`shipped module imports test support: ${arrow}`);
        continue;
      }
      if (testkit) continue;
      const toLayer = layerOf(to);
      if (toLayer > fromLayer) {
        out.push(`upward import: ${arrow} (layer ${LAYERS[fromLayer]?.join(' ')} imports layer ${LAYERS[toLayer]?.join(' ')})`);
        continue;
      }
      const toRank = agentRank(to);
      if (fromRank !== undefined && fromRank >= 0 && toRank !== undefined && toRank >= fromRank) {
        out.push(`upward import inside reference/agent: ${arrow} (AGENT_ORDER puts ${to.slice(6)} at or above ${from.slice(6)})`);
      }
    }
  }
  return out;
}

/**
 * conformance/ bottom-up, as AGENT_ORDER is for reference/agent: an entry is a file or a folder
 * (ending in "/"), a module's entry is the first that names it, and a module may import only
 * modules of its own entry or an earlier one. Test support (the modules under test/) may import
 * anything and no other module may import it; every other module may also import reference/
 * (but not its test support) and schemas/, and nothing else outside conformance/.
 */
export const CONFORMANCE_ORDER: readonly string[] = [
  // Values and tables: where files are, verdicts, the requirement index, schemas, keys, transcripts.
  'paths.ts',
  'verdict.ts',
  'requirements.ts',
  'schemas.ts',
  'mac.ts',
  'session-state.ts',
  'transcript.ts',
  'judge/',
  'leftovers.ts',
  // Reaching an agent, and what the harness saw of it: targets, frames, waits, silences, the peer.
  'nats-processes.ts',
  'target.ts',
  'wait-listening.ts',
  'findings.ts',
  'inspect.ts',
  'load.ts',
  'waits.ts',
  'silence.ts',
  'peer.ts',
  'fault-layer.ts',
  // What a case is written with: steps, its context, the case itself, the probe, the models of properties.
  'steps.ts',
  'context.ts',
  'case.ts',
  'probe.ts',
  'models/',
  // Mutants of the reference agent: the layer, its operators, the rows of each chapter.
  'mutation/layer.ts',
  'mutation/operators.ts',
  'mutation/rows.ts',
  'mutation/mutants/',
  'mutation/mutants.ts',
  'mutation/switch.ts',
  // Running cases, and the engines some cases run on.
  'options.ts',
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

/** The entry of CONFORMANCE_ORDER a module of conformance/ stands in (-1: none). */
export function conformanceRank(path: string): number {
  return CONFORMANCE_ORDER.findIndex((e) => (e.endsWith('/') ? path.startsWith(e) : path === e));
}

/** Whether a module of conformance/ is test support: it lives under conformance/test/. */
export function isConformanceTestSupport(path: string): boolean {
  return path.startsWith('test/');
}

/** Every rule broken in the graph of conformance/ (read with readGraph on the conformance/ folder), one line each. */
export function conformanceViolations(graph: Graph): string[] {
  const out: string[] = [];
  const at = (f: string) => `conformance/${f}`;
  for (const { members, loop } of findCycles(graph)) {
    const path = [...loop, loop[0]].map((f) => at(f as string)).join(' → ');
    out.push(`import circle among ${members.length} files (${members.join(', ')}); one loop: ${path}`);
  }
  for (const [from, { edges, lines }] of graph.modules) {
    const support = isConformanceTestSupport(from);
    if (lines > MAX_LINES && !support) out.push(`${at(from)} has ${lines} lines, more than ${MAX_LINES}: split it by spec noun`);
    if (support) continue;
    const fromRank = conformanceRank(from);
    if (fromRank < 0) {
      out.push(`${at(from)} is in no entry of CONFORMANCE_ORDER: declare where it stands in tools/import-graph.ts`);
      continue;
    }
    for (const edge of edges) {
      const arrow = `${at(from)} → ${at(edge.to)}${edge.typeOnly ? ' (types)' : ''}`;
      if (edge.to.startsWith('../')) {
        const inside = edge.to.slice(3);
        const folder = inside.split('/')[0] ?? '';
        if (folder === 'schemas') continue;
        if (folder === 'reference' && !TESTKITS.includes(inside.slice('reference/'.length))) continue;
        out.push(
          folder === 'reference'
            ? `shipped module imports test support: ${arrow}`
            : `import out of conformance/: ${arrow}; tap-conform must not reach into ${folder}/`,
        );
        continue;
      }
      if (isConformanceTestSupport(edge.to)) {
        out.push(`shipped module imports test support: ${arrow}`);
        continue;
      }
      const toRank = conformanceRank(edge.to);
      if (toRank > fromRank) {
        out.push(
          `upward import inside conformance/: ${arrow} (CONFORMANCE_ORDER puts ${CONFORMANCE_ORDER[toRank]} above ${CONFORMANCE_ORDER[fromRank]})`,
        );
      }
    }
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = new URL('../reference/', import.meta.url).pathname;
  const found = [...violations(readGraph(root)), ...conformanceViolations(readGraph(new URL('../conformance/', import.meta.url).pathname))];
  for (const line of found) console.log(line);
  console.log(found.length === 0 ? 'import graph: every arrow points down' : `import graph: ${found.length} violations`);
  process.exit(found.length === 0 ? 0 : 1);
}
