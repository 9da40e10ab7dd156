/**
 * The bridge's self-test (spec: bridge-mcp-server): a scripted MCP server that misbehaves —
 * dies mid-call, answers twice, never answers, fails, refuses, leaves a child behind — served by
 * the bridge, and what the reference client, as a TAP requester, sees of it. The TAP side runs in
 * memory; the MCP server is a real process.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createAgent } from '../agent/index.ts';
import { cleanupsAfterEach } from '../client/reference-agent.testkit.ts';
import { connect } from '../client/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { startMcpBridge } from './mcp-agent.ts';
import type { PlanMode } from './mcp-mapping.ts';

const SERVER = fileURLToPath(new URL('./test/misbehaving-mcp-server.mjs', import.meta.url));
const cleanups = cleanupsAfterEach();

/** True while a process with this pid runs (a zombie left to an init that does not reap is not running). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The bridge in front of the misbehaving server, an agent serving it, and a client of that agent. */
async function bridged(options: { stubborn?: boolean; plans?: PlanMode; versions?: string[] } = {}) {
  const logged: string[] = [];
  const bridge = await startMcpBridge({
    server: { command: process.execPath, args: [SERVER, ...(options.stubborn ? ['--stubborn'] : [])] },
    plans: options.plans ?? 'none',
    closeWaits: { stdinMs: 300, termMs: 300 },
    log: (m) => logged.push(m),
  });
  cleanups.push(() => bridge.close());
  const agent = createAgent({ ...bridge.agent, env: false, signals: false, logger: () => {}, cancelGraceMs: 1_000 });
  cleanups.push(() => agent.shutdown());
  const [a, b] = createMemoryPair();
  agent.attach(b);
  const client = await connect(a, {
    agentId: 'test-requester',
    retry: { attempts: 1 },
    ...(options.versions ? { versions: options.versions } : {}),
  });
  cleanups.push(() => client.close());
  return { bridge, agent, client, logged };
}

describe('an MCP server as a TAP agent, in front of a misbehaving server (spec: bridge-mcp-server)', () => {
  it('offers each tool as an mcp.* capability with its schema and the server version (TAP-BRIDGE-101, TAP-BRIDGE-102)', async () => {
    const { bridge } = await bridged();
    const die = bridge.agent.capabilities['mcp.die'];
    expect(Object.keys(bridge.agent.capabilities).sort()).toEqual(
      ['mcp.cancellations', 'mcp.count', 'mcp.die', 'mcp.fail', 'mcp.refuse', 'mcp.silent', 'mcp.spawn', 'mcp.twice'].sort(),
    );
    expect(die && 'capability' in die ? die.capability : undefined).toMatchObject({
      version: '0.0.1',
      side_effects: true,
      input_schema: { type: 'object', properties: {} },
    });
  });

  it('a server that dies mid-call fails the task INTERNAL_ERROR naming its exit, and every later call too (TAP-BRIDGE-117, TAP-BRIDGE-118, TAP-BRIDGE-119)', async () => {
    const { client, bridge } = await bridged();
    const progress: unknown[] = [];
    const handle = client.submit('mcp.die', {});
    const events = (async () => {
      for await (const e of handle.events) if (e.payload.kind === 'progress') progress.push(e.payload);
    })();
    const result = await handle.result;
    await events;
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
    expect(result.error?.message).toMatch(/exited with status 7/);
    expect(progress).toEqual([expect.objectContaining({ kind: 'progress', percent: 50 })]);
    await bridge.exited;
    const later = await client.submit('mcp.fail', {}).result;
    expect(later.error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
    // The runtime still serves what needs no MCP server: the task table.
    expect((await handle.status()).state).toBe('failed');
  });

  it('a server that answers twice completes the task with the first answer, once (TAP-BRIDGE-117)', async () => {
    const { client, logged } = await bridged();
    const result = await client.submit('mcp.twice', {}).result;
    expect(result).toMatchObject({ status: 'completed', output: { content: [{ type: 'text', text: 'first' }] } });
    const after = await client.submit('mcp.cancellations', {}).result;
    expect(after.status).toBe('completed');
    expect(logged.join('\n')).toMatch(/unknown message ID/i);
  });

  it('a TAP cancel of a call the server never answers ends it cancelled and sends notifications/cancelled (TAP-BRIDGE-110, TAP-BRIDGE-111)', async () => {
    const { client } = await bridged();
    const handle = client.submit('mcp.silent', {});
    await handle.accepted;
    await new Promise((r) => setTimeout(r, 100));
    await handle.cancel();
    expect((await handle.result).status).toBe('cancelled');
    const seen = await client.submit('mcp.cancellations', {}).result;
    expect((seen.output as { structuredContent: { cancelled: unknown[] } }).structuredContent.cancelled).toHaveLength(1);
  });

  it('a call the server never answers ends at its deadline, and the server is told (TAP-BRIDGE-113, TAP-BRIDGE-110)', async () => {
    const { client } = await bridged();
    const result = await client.submit('mcp.silent', {}, { timeoutMs: 400 }).result;
    expect(['failed', 'timed_out']).toContain(result.status);
    if (result.status === 'failed') expect(result.error?.code).toBe('DEADLINE_EXCEEDED');
    const seen = await client.submit('mcp.cancellations', {}).result;
    expect((seen.output as { structuredContent: { cancelled: unknown[] } }).structuredContent.cancelled).toHaveLength(1);
  });

  it('a repeated idempotency_key is answered from the records, and the tool is not called again (TAP-BRIDGE-112)', async () => {
    const { client } = await bridged();
    const calls = async (options: { idempotencyKey?: string }) =>
      ((await client.submit('mcp.count', {}, options).result).output as { structuredContent: { calls: number } }).structuredContent.calls;
    expect(await calls({ idempotencyKey: 'count-once' })).toBe(1);
    expect(await calls({ idempotencyKey: 'count-once' })).toBe(1);
    expect(await calls({})).toBe(2);
  });

  it('isError is CAPABILITY_FAILED in 1.1 and INTERNAL_ERROR in 1.0; -32602 is INVALID_MESSAGE (TAP-BRIDGE-106, TAP-BRIDGE-107, TAP-BRIDGE-117)', async () => {
    const v11 = await bridged();
    expect((await v11.client.submit('mcp.fail', {}).result).error).toMatchObject({
      code: 'CAPABILITY_FAILED',
      retryable: false,
      message: 'the tool failed as scripted',
      details: { content: [{ type: 'text', text: 'the tool failed as scripted' }] },
    });
    expect((await v11.client.submit('mcp.refuse', {}).result).error).toMatchObject({ code: 'INVALID_MESSAGE', retryable: false });
    const v10 = await bridged({ versions: ['1.0'] });
    expect((await v10.client.submit('mcp.fail', {}).result).error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
  });

  it('a destructive tool waits for an approved plan, and a rejected plan never calls it (TAP-BRIDGE-114, TAP-BRIDGE-115)', async () => {
    const { client, logged } = await bridged({ plans: 'destructive' });
    const plans: string[] = [];
    const rejected = await client.submit('mcp.twice', {}, { onPlan: (p) => (plans.push(p.plan.steps[0]?.action ?? ''), 'rejected') })
      .result;
    expect(rejected).toMatchObject({ status: 'failed', error: { code: 'PLAN_REJECTED' } });
    // Had the tool run, its second answer would have been logged.
    await client.submit('mcp.cancellations', {}).result;
    expect(logged.join('\n')).not.toMatch(/unknown message ID/i);
    const approved = await client.submit('mcp.twice', {}, { onPlan: () => 'approved' }).result;
    expect(approved.status).toBe('completed');
    // A read-only tool runs without a plan.
    expect((await client.submit('mcp.cancellations', {}).result).status).toBe('completed');
    expect(plans).toEqual(['tools/call twice']);
  });

  it('closing a server that ignores its stdin and SIGTERM leaves no process of it behind, its child included (TAP-BRIDGE-121, TAP-BRIDGE-122)', async () => {
    const { client, bridge } = await bridged({ stubborn: true });
    const result = await client.submit('mcp.spawn', {}).result;
    const { pid, server } = (result.output as { structuredContent: { pid: number; server: number } }).structuredContent;
    expect(server).toBe(bridge.pid);
    expect(running(pid) && running(server)).toBe(true);
    await bridge.close();
    expect(await bridge.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await new Promise((r) => setTimeout(r, 200));
    expect(running(server)).toBe(false);
    expect(running(pid)).toBe(false);
  });
});
