import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { conformanceViolations, readGraph } from '../../tools/import-graph.ts';

const made: string[] = [];

/** A throwaway conformance/ folder holding the given modules. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'tap-conformance-graph-'));
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

describe('the import graph of conformance/', () => {
  it('follows CONFORMANCE_ORDER, with no circle and no module over 400 lines', () => {
    const found = conformanceViolations(readGraph(new URL('../', import.meta.url).pathname));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('names an upward import, a circle and a module of no declared entry', () => {
    const root = tree({
      'verdict.ts': "import type { Peer } from './peer.ts';\nexport type V = Peer;\n",
      'peer.ts': 'export type Peer = number;\n',
      'steps.ts': "import type { C } from './context.ts';\nexport type S = C;\n",
      'context.ts': "import type { S } from './steps.ts';\nexport type C = S;\n",
      'helpers.ts': 'export const h = 1;\n',
    });
    expect(conformanceViolations(readGraph(root)).sort()).toEqual([
      'conformance/helpers.ts is in no entry of CONFORMANCE_ORDER: declare where it stands in tools/import-graph.ts',
      'import circle among 2 files (context.ts, steps.ts); one loop: conformance/context.ts → conformance/steps.ts → conformance/context.ts',
      'upward import inside conformance/: conformance/steps.ts → conformance/context.ts (types) (CONFORMANCE_ORDER puts context.ts above steps.ts)',
      'upward import inside conformance/: conformance/verdict.ts → conformance/peer.ts (types) (CONFORMANCE_ORDER puts peer.ts above verdict.ts)',
    ]);
  });

  it('lets a case file import what its folder holds, and test support import anything', () => {
    const root = tree({
      'cases/core/kit.ts': 'export const k = 1;\n',
      'cases/core/handshake.params.ts': "import { k } from './kit.ts';\nexport const cases = [k];\n",
      'test/bins.ts':
        "import { cases } from '../cases/core/handshake.params.ts';\nimport { main } from '../../tools/x.ts';\nexport const b = [cases, main];\n",
    });
    expect(conformanceViolations(readGraph(root))).toEqual([]);
  });

  it('refuses a module that reaches into tools/, imports test support, or runs past 400 lines', () => {
    const root = tree({
      'run.ts': "import { main } from '../tools/mutation.ts';\nexport const r = main;\n",
      'runner.ts': "import { agent } from './test/memory-target.ts';\nexport const x = agent;\n",
      'cli.ts': 'export const x = 1;\n'.repeat(401),
      'probe.ts':
        "import { peer } from '../reference/core/testkit.ts';\nimport { a } from '../reference/agent/index.ts';\nexport const p = [peer, a];\n",
      'test/memory-target.ts': 'export const agent = 1;\n',
    });
    expect(conformanceViolations(readGraph(root)).sort()).toEqual([
      'conformance/cli.ts has 401 lines, more than 400: split it by spec noun',
      'import out of conformance/: conformance/run.ts → conformance/../tools/mutation.ts; tap-conform must not reach into tools/',
      'shipped module imports test support: conformance/probe.ts → conformance/../reference/core/testkit.ts',
      'shipped module imports test support: conformance/runner.ts → conformance/test/memory-target.ts',
    ]);
  });
});
