/**
 * The fixtures of the bridges' mapping tables (fixtures/bridges/mcp-host, fixtures/bridges/a2a):
 * one file a row, { requirement, function, args, expected }, each replayed through the mapping
 * function it names, so the tables of spec/1.1 bridge-mcp-host and bridge-a2a, the fixtures and
 * the facades agree (spec: bridge-mcp-host, bridge-a2a).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as a2a from './a2a-mapping.ts';
import * as mcp from './mcp-host-mapping.ts';
import { meshCapabilities } from './mesh-target.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const REQUIREMENTS = new Set(
  (
    JSON.parse(readFileSync(join(ROOT, 'spec', '1.1', 'requirements.json'), 'utf8')) as { requirements: Array<{ id: string }> }
  ).requirements.map((r) => r.id),
);

type Fn = (...args: unknown[]) => unknown;
const FUNCTIONS: Record<string, Record<string, Fn>> = {
  'mcp-host': {
    toolOf: mcp.toolOf as Fn,
    inputOf: mcp.inputOf as Fn,
    notificationOf: mcp.notificationOf as Fn,
    toolResultOf: mcp.toolResultOf as Fn,
    refusalOf: mcp.refusalOf as Fn,
    elicitationOf: mcp.elicitationOf as Fn,
    planElicitationOf: mcp.planElicitationOf as Fn,
    planDecisionOf: mcp.planDecisionOf as Fn,
    traceOf: mcp.traceOf as Fn,
    meshCapabilities: meshCapabilities as Fn,
    mcpTaskStatusOf: (state: unknown) => mcp.MCP_TASK_STATUS_OF[state as string],
  },
  a2a: {
    agentCardOf: a2a.agentCardOf as Fn,
    targetOf: a2a.targetOf as Fn,
    stateOf: (state: unknown) => a2a.STATE_OF[state as string],
    eventsOf: a2a.eventsOf as Fn,
    refusedOf: a2a.refusedOf as Fn,
    decisionOf: a2a.decisionOf as Fn,
    messageValue: a2a.messageValue as Fn,
    traceOf: a2a.traceOf as Fn,
    listFilterOf: a2a.listFilterOf as Fn,
    listedTaskOf: a2a.listedTaskOf as Fn,
  },
};

/** JSON as a file holds it: null for undefined, no undefined members, no functions. */
function asJson(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

for (const table of ['mcp-host', 'a2a'] as const) {
  const dir = join(ROOT, 'fixtures', 'bridges', table);
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  describe(`fixtures/bridges/${table} (spec: bridge-${table})`, () => {
    it('has a fixture for each requirement of its chapter that a table fixes', () => {
      const named = new Set(files.map((f) => (JSON.parse(readFileSync(join(dir, f), 'utf8')) as { requirement: string }).requirement));
      expect(named.size).toBeGreaterThanOrEqual(table === 'a2a' ? 8 : 12);
    });
    for (const file of files) {
      it(file, () => {
        const row = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
          requirement: string;
          function: string;
          args: unknown[];
          expected: unknown;
        };
        expect(REQUIREMENTS.has(row.requirement), `${row.requirement} is not a requirement of spec/1.1`).toBe(true);
        const fn = FUNCTIONS[table]![row.function];
        expect(fn, `${file} names ${row.function}, which is no mapping function of ${table}`).toBeDefined();
        expect(asJson(fn!(...row.args.map((a) => (a === null ? undefined : a))))).toEqual(row.expected);
      });
    }
  });
}
