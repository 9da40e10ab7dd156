/**
 * The MCP facade of a reference agent, in memory, driven by the MCP SDK's own Client: shared by the
 * tests of plain calls (mcp-host.test.ts) and of MCP tasks (mcp-host-tasks.test.ts).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { inMemory } from '../client/reference-agent.testkit.ts';
import type { WireEntry } from '../client/index.ts';
import { createMcpHost, type McpHostOptions } from './mcp-host.ts';

/** A TAP frame as the wire log holds it. */
export interface Frame {
  type: string;
  task_id?: string;
  metadata?: Record<string, unknown>;
  payload: Record<string, unknown>;
}

/** The frames of `type` the facade sent ('out') or received ('in'). */
export function frames(wire: WireEntry[], dir: 'in' | 'out', type: string): Frame[] {
  return wire.map((e) => (e.dir === dir ? (JSON.parse(e.text) as Frame) : undefined)).filter((m): m is Frame => m?.type === type);
}

/** The task.request frames the facade sent to the agent. */
export function requests(wire: WireEntry[]): Frame[] {
  return frames(wire, 'out', 'task.request');
}

/** Facades of reference agents for one test file, each closed after its test. */
export function mcpFacades() {
  const { cleanups, agentWith, overMemory } = inMemory();
  /** An MCP SDK client connected to the facade of a reference agent; `elicit` answers elicitations (and declares the capability). */
  return async function mcpClient(options: { elicit?: (r: ElicitRequest) => unknown; host?: McpHostOptions; versions?: string[] } = {}) {
    const { client: tap, wire } = await overMemory(agentWith(), options.versions ? { versions: options.versions } : {});
    const host = await createMcpHost(tap, options.host);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await host.connect(a);
    const mcp = new Client({ name: 'test-host', version: '1.0.0' }, { capabilities: options.elicit ? { elicitation: { form: {} } } : {} });
    if (options.elicit) {
      const elicit = options.elicit;
      mcp.setRequestHandler(ElicitRequestSchema, async (r) => elicit(r) as never);
    }
    await mcp.connect(b);
    cleanups.push(() => mcp.close());
    cleanups.push(() => host.close());
    return { mcp, wire, tap, host };
  };
}
