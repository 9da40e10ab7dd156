/**
 * The mapping of an MCP server onto a TAP agent, replayed over every fixture of
 * fixtures/bridges/mcp-server/ (spec: bridge-mcp-server): the MCP messages in, the TAP messages
 * out. A second bridge is held to the same files by replacing the functions of `MAPPING`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  callOf,
  cancelOf,
  capabilitiesOf,
  capabilityName,
  type McpTool,
  type PlanMode,
  planFor,
  planNeeded,
  progressOf,
  tapErrorOf,
  taskResultOf,
} from './mcp-mapping.ts';

const DIR = new URL('../../fixtures/bridges/mcp-server/', import.meta.url);

// biome-ignore lint/suspicious/noExplicitAny: the JSON messages of a fixture, read by field
type Json = any;

interface Fixture {
  kind: 'tool' | 'call' | 'result' | 'progress' | 'cancel' | 'error' | 'plan';
  requirement: string;
  anchor: string;
  title: string;
  session?: string;
  plans?: PlanMode;
  call?: { id: number | string };
  mcp: Json[];
  tap: Json[];
}

const fixtures = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => ({ file, fixture: JSON.parse(readFileSync(new URL(file, DIR), 'utf8')) as Fixture }));

/** What each kind of fixture checks, with the bridge's mapping functions. */
const MAPPING: Record<Fixture['kind'], (f: Fixture) => void> = {
  tool: (f) => {
    const [init, list] = f.mcp;
    const { offered } = capabilitiesOf(list.result.tools as McpTool[], init.result.serverInfo);
    expect(offered.map((o) => o.capability)).toEqual(f.tap[0].payload.agent.capabilities);
  },
  call: (f) => {
    const out = f.mcp[0];
    expect(capabilityName(out.params.name)).toBe(f.tap[0].payload.capability);
    expect({ jsonrpc: '2.0', ...callOf(out.params.name, f.tap[0].payload.input) }).toEqual(out);
  },
  result: (f) => expect(taskResultOf(f.mcp[0].result, f.session ?? '1.1')).toEqual(f.tap[0].payload),
  progress: (f) => expect({ kind: 'progress', ...progressOf(f.mcp[0].params) }).toEqual(f.tap[0].payload),
  cancel: (f) => {
    const sent = cancelOf(f.call?.id ?? -1, f.tap[0].payload.reason ?? 'cancelled');
    expect(sent).toMatchObject(f.mcp[0]);
    expect(typeof sent.params.reason).toBe('string');
  },
  error: (f) => expect({ status: 'failed', error: tapErrorOf(f.mcp[0].error) }).toMatchObject(f.tap[0].payload),
  plan: (f) => {
    const tool = f.mcp[0].result.tools[0] as McpTool;
    const args = f.mcp[1].params.arguments;
    const sent = planNeeded(tool, f.plans ?? 'destructive') ? [{ type: 'plan.submit', payload: { plan: planFor(tool, args) } }] : [];
    expect(sent).toEqual(f.tap);
  },
};

describe('the MCP-server mapping against fixtures/bridges/mcp-server (spec: bridge-mcp-server)', () => {
  it('has fixtures for every kind of row, each naming a requirement of the chapter', () => {
    expect(new Set(fixtures.map((f) => f.fixture.kind))).toEqual(new Set(Object.keys(MAPPING)));
    for (const { fixture } of fixtures) expect(fixture.requirement).toMatch(/^TAP-BRIDGE-1[0-2]\d$/);
  });

  for (const { file, fixture } of fixtures) {
    it(`${file}: ${fixture.title} (${fixture.requirement})`, () => MAPPING[fixture.kind](fixture));
  }
});
