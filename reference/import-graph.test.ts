import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { houseViolations, readGraph, TREES, violations } from '../tools/import-graph.ts';
import { optionalPeerViolations } from '../tools/optional-peers.ts';

const made: string[] = [];

/** A throwaway folder (read as reference/, conformance/, tools/ or bench/) holding the given modules. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'tap-import-graph-'));
  made.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return `${root}/`;
}

afterEach(() => {
  for (const root of made.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe('the import graph of the house', () => {
  it('covers reference/, conformance/, tools/ and bench/ and has no circle, no upward import and no module over 400 lines there', () => {
    expect(TREES.map((t) => t.folder)).toEqual(expect.arrayContaining(['reference/', 'conformance/', 'tools/', 'bench/']));
    const found = houseViolations(new URL('../', import.meta.url).pathname);
    expect(found, found.join('\n')).toEqual([]);
  });

  it('lets only the NATS client loader import @nats-io/* for its values; a type import is free anywhere', () => {
    const root = tree({
      'reference/transports/nats/client.ts': "export const t = await import('@nats-io/transport-node');\n",
      'reference/jetstream/consumer.ts': "import { AckPolicy } from '@nats-io/jetstream';\nexport const a = AckPolicy;\n",
      'conformance/cases/view.ts': "export const load = () => import('@nats-io/kv');\n",
      'conformance/cases/typed.ts': "import type { KV } from '@nats-io/kv';\nexport type K = KV;\n",
    });
    expect(optionalPeerViolations(root).sort()).toEqual([
      'conformance/cases/view.ts: imports the optional peer @nats-io/kv for its values; take them from reference/transports/nats/client.ts',
      'reference/jetstream/consumer.ts: imports the optional peer @nats-io/jetstream for its values; take them from reference/transports/nats/client.ts',
    ]);
  });

  it('names every file of a circle, type imports included', () => {
    const root = tree({
      'core/a.ts': "import type { B } from './b.ts';\nexport type A = B;\n",
      'core/b.ts': "import { c } from './c.ts';\nexport type B = string;\nexport const b = c;\n",
      'core/c.ts': "import type { A } from './a.ts';\nexport const c = 1 as unknown as A;\n",
    });
    const found = violations(readGraph(root));
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('import circle among 3 files (reference/core/a.ts, reference/core/b.ts, reference/core/c.ts)');
    expect(found[0]).toContain('reference/core/a.ts → reference/core/b.ts → reference/core/c.ts → reference/core/a.ts');
  });

  it('names the edge of an upward import between layers and inside reference/agent', () => {
    const root = tree({
      'core/decode.ts': "import type { Frame } from '../transports/transport.ts';\nexport type F = Frame;\n",
      'transports/transport.ts': 'export type Frame = string;\n',
      'agent/tasks.ts': "import type { Runtime } from './runtime.ts';\nexport type T = Runtime;\n",
      'agent/runtime.ts': 'export type Runtime = number;\n',
    });
    expect(violations(readGraph(root)).sort()).toEqual([
      'upward import inside reference/agent/: reference/agent/tasks.ts → reference/agent/runtime.ts (types) (the declared order puts runtime.ts at or above tasks.ts)',
      'upward import: reference/core/decode.ts → reference/transports/transport.ts (types) (layer core/ package.ts peers.ts imports layer transports/ crypto.ts trust.ts telemetry.ts task-scope.ts)',
    ]);
  });

  it('refuses a shipped module that reaches into tools/, imports test support, or runs past 400 lines', () => {
    const root = tree({
      'tapctl/gen-types.ts': "export { main } from '../../tools/gen-types/main.ts';\n",
      'core/samples.testkit.ts': 'export const peer = 1;\n',
      'core/ids.ts': "import { peer } from './samples.testkit.ts';\nexport const id = peer;\n",
      'client/client.ts': 'export const x = 1;\n'.repeat(401),
      'core/ids.test.ts': "import { main } from '../../tools/gen-types/main.ts';\nexport const y = main;\n",
    });
    expect(violations(readGraph(root)).sort()).toEqual([
      'import out of reference/: reference/tapctl/gen-types.ts → tools/gen-types/main.ts; a module of reference/ must not reach into tools/',
      'reference/client/client.ts has 401 lines, more than 400: split it by spec noun',
      'shipped module imports test support: reference/core/ids.ts → reference/core/samples.testkit.ts',
    ]);
  });

  it('lets a file that is not declared in reference/agent be found', () => {
    const root = tree({ 'agent/helpers.ts': 'export const h = 1;\n' });
    expect(violations(readGraph(root))).toEqual([
      'reference/agent/helpers.ts is not in the declared order of reference/agent/: declare where it stands in tools/import-graph.ts',
    ]);
  });

  it('checks tools/ and bench/ by their own layers: a library that imports a command, a bench scenario that imports tools/, a file in no layer', () => {
    const tools = tree({
      'requirements/chapter.ts': "import { main } from '../requirements.ts';\nexport const c = main;\n",
      'requirements.ts': "import { c } from './requirements/chapter.ts';\nexport const main = c;\n",
      'stray.ts': 'export const s = 1;\n',
      'test-all.ts': "import { NEEDS } from '../test/system-tools.testkit.ts';\nexport const n = NEEDS;\n",
    });
    expect(violations(readGraph(tools, 'tools/')).sort()).toEqual([
      'import circle among 2 files (tools/requirements.ts, tools/requirements/chapter.ts); one loop: tools/requirements.ts → tools/requirements/chapter.ts → tools/requirements.ts',
      'tools/stray.ts is in no declared layer: add it to the layers of tools/ in tools/import-graph.ts',
      expect.stringMatching(
        /^upward import: tools\/requirements\/chapter\.ts → tools\/requirements\.ts \(layer emit-validators\.ts .* imports layer .*requirements\.ts/,
      ),
    ]);
    const bench = tree({
      'lib/stats.ts': "import { x } from '../../tools/summary.ts';\nexport const s = x;\n",
      'scenarios/nats.ts':
        "import { startNatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';\nexport const n = startNatsServer;\n",
    });
    expect(violations(readGraph(bench, 'bench/'))).toEqual([
      'import out of bench/: bench/lib/stats.ts → tools/summary.ts; a module of bench/ must not reach into tools/',
    ]);
  });

  it('checks conformance/ by CONFORMANCE_ORDER: an upward import, a circle, a module of no entry', () => {
    const root = tree({
      'verdict.ts': "import type { Peer } from './peer.ts';\nexport type V = Peer;\n",
      'peer.ts': 'export type Peer = number;\n',
      'steps.ts': "import type { C } from './context.ts';\nexport type S = C;\n",
      'context.ts': "import type { S } from './steps.ts';\nexport type C = S;\n",
      'helpers.ts': 'export const h = 1;\n',
    });
    expect(violations(readGraph(root, 'conformance/')).sort()).toEqual([
      'conformance/helpers.ts is in no declared layer: add it to the layers of conformance/ in tools/import-graph.ts',
      'import circle among 2 files (conformance/context.ts, conformance/steps.ts); one loop: conformance/context.ts → conformance/steps.ts → conformance/context.ts',
      'upward import: conformance/steps.ts → conformance/context.ts (types) (layer steps.ts imports layer context.ts)',
      'upward import: conformance/verdict.ts → conformance/peer.ts (types) (layer verdict.ts imports layer peer.ts)',
    ]);
  });

  it('lets a case file of conformance/ import what cases/ holds, and its test support import any layer', () => {
    const root = tree({
      'cases/core/kit.ts': 'export const k = 1;\n',
      'cases/core/handshake.params.ts': "import { k } from './kit.ts';\nexport const cases = [k];\n",
      'test/bins.testkit.ts':
        "import { cases } from '../cases/core/handshake.params.ts';\nimport { peer } from '../../reference/core/samples.testkit.ts';\nexport const b = [cases, peer];\n",
    });
    expect(violations(readGraph(root, 'conformance/'))).toEqual([]);
  });

  it('refuses a module of conformance/ that reaches into tools/, imports test support, or runs past 400 lines', () => {
    const root = tree({
      'run.ts': "import { main } from '../tools/mutation.ts';\nexport const r = main;\n",
      'runner.ts': "import { agent } from './test/memory-target.testkit.ts';\nexport const x = agent;\n",
      'cli.ts': 'export const x = 1;\n'.repeat(401),
      'probe.ts':
        "import { peer } from '../reference/core/samples.testkit.ts';\nimport { a } from '../reference/agent/index.ts';\nexport const p = [peer, a];\n",
      'test/memory-target.testkit.ts': 'export const agent = 1;\n',
    });
    expect(violations(readGraph(root, 'conformance/')).sort()).toEqual([
      'conformance/cli.ts has 401 lines, more than 400: split it by spec noun',
      'import out of conformance/: conformance/run.ts → tools/mutation.ts; a module of conformance/ must not reach into tools/',
      'shipped module imports test support: conformance/probe.ts → reference/core/samples.testkit.ts',
      'shipped module imports test support: conformance/runner.ts → conformance/test/memory-target.testkit.ts',
    ]);
  });

  it('lets a demo, which is not shipped, use test support, and no other module of reference/agents', () => {
    const root = tree({
      'agents/mesh-demo/run.ts': "import { s } from '../../transports/nats/nats-server.testkit.ts';\nexport const r = s;\n",
      'agents/reference-agent.ts': "import { s } from '../transports/nats/nats-server.testkit.ts';\nexport const r = s;\n",
      'transports/nats/nats-server.testkit.ts': 'export const s = 1;\n',
    });
    expect(violations(readGraph(root))).toEqual([
      'shipped module imports test support: reference/agents/reference-agent.ts → reference/transports/nats/nats-server.testkit.ts',
    ]);
  });
});
