/**
 * The MCP facade driven by the MCP SDK's own Client, in memory, in front of the reference agent
 * runtime with the conformance capabilities (spec: bridge-mcp-host).
 */
import type { ElicitRequest, Progress } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { TWO_FILE_PLAN as PLAN } from '../agent/peer.testkit.ts';
import { frames, mcpFacades, requests } from './mcp-host.testkit.ts';

const mcpClient = mcpFacades();

describe('a TAP agent as an MCP server (spec: bridge-mcp-host)', () => {
  it('lists every capability as a tool, wrapping an input with no object schema in { input } (spec: bridge-mcp-host#tools)', async () => {
    const { mcp } = await mcpClient();
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name).sort()).toContain('tap.test.echo');
    const plan = tools.find((t) => t.name === 'tap.test.plan')!;
    expect(plan.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(plan.inputSchema).toMatchObject({ type: 'object', required: ['input'] });
    const echo = await mcp.callTool({ name: 'tap.test.echo', arguments: { input: { hello: 'world' } } });
    expect(echo).toMatchObject({ content: [{ type: 'text', text: '{"hello":"world"}' }], structuredContent: { hello: 'world' } });
    expect(echo.isError).toBeUndefined();
  });

  it('sends each event as a progress notification, progress being the TAP sequence, and carries traceparent (spec: bridge-mcp-host#events)', async () => {
    const { mcp, wire } = await mcpClient();
    const seen: Progress[] = [];
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const result = await mcp.callTool({ name: 'tap.test.stream', arguments: { input: { count: 3 } }, _meta: { traceparent } }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    expect(result.structuredContent).toEqual({ count: 3 });
    const outputs = seen.filter((p) => p.message?.startsWith('output: '));
    expect(outputs.map((p) => p.message)).toEqual(['output: {"index":0}', 'output: {"index":1}', 'output: {"index":2}']);
    const progress = seen.map((p) => p.progress);
    expect(progress).toEqual([...progress].sort((x, y) => x - y));
    expect(new Set(progress).size).toBe(progress.length);
    expect(requests(wire)[0]!.metadata?.traceparent).toBe(traceparent);
  });

  it('sends no trace context of 1.1 in a session of 1.0 (spec: bridge-mcp-host#trace)', async () => {
    const { mcp, wire } = await mcpClient({ versions: ['1.0'] });
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const result = await mcp.callTool({ name: 'tap.test.echo', arguments: { input: 1 }, _meta: { traceparent, tracestate: 'a=1' } });
    expect(result.content).toEqual([{ type: 'text', text: '1' }]);
    expect(requests(wire)[0]!.metadata?.traceparent).toBeUndefined();
    expect(requests(wire)[0]!.metadata?.tracestate).toBeUndefined();
  });

  it('turns notifications/cancelled into task.cancel (spec: bridge-mcp-host#cancel)', async () => {
    const { mcp, wire } = await mcpClient();
    const controller = new AbortController();
    const call = mcp.callTool({ name: 'tap.test.sleep', arguments: { input: { ms: 20_000 } } }, undefined, { signal: controller.signal });
    await expect.poll(() => requests(wire).length).toBe(1);
    await new Promise((r) => setTimeout(r, 20));
    controller.abort('the user stopped it');
    await expect(call).rejects.toThrow();
    await expect.poll(() => frames(wire, 'in', 'task.result').map((m) => m.payload.status)).toEqual(['cancelled']);
    expect(frames(wire, 'out', 'task.cancel')).toHaveLength(1);
  });

  it('gives a failed task as isError with the TAP code, and an unknown tool as JSON-RPC -32602 (spec: bridge-mcp-host#errors)', async () => {
    const { mcp } = await mcpClient();
    const failed = await mcp.callTool({
      name: 'tap.test.fail',
      arguments: { input: { code: 'CAPABILITY_FAILED', message: 'the disk is full' } },
    });
    expect(failed.isError).toBe(true);
    expect(failed.content).toEqual([{ type: 'text', text: 'CAPABILITY_FAILED: the disk is full' }]);
    expect((failed._meta!['tap/bridge'] as { error: { code: string } }).error.code).toBe('CAPABILITY_FAILED');
    await expect(mcp.callTool({ name: 'no.such.tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    const invalid = await mcp.callTool({ name: 'tap.test.fail', arguments: { input: { code: 'not a code' } } });
    expect(invalid.isError).toBe(true);
    expect((invalid.content as Array<{ text: string }>)[0]!.text).toMatch(/^INVALID_MESSAGE: /);
  });

  it('asks for TAP input by elicitation, and asks again after an answer the agent refused (spec: bridge-mcp-host#input)', async () => {
    const answers = [3, 4];
    const asked: ElicitRequest[] = [];
    const { mcp } = await mcpClient({
      elicit: (r) => {
        asked.push(r);
        return { action: 'accept', content: { answer: answers.shift() } };
      },
    });
    const result = await mcp.callTool({
      name: 'tap.test.ask',
      arguments: { input: { schema: { type: 'integer', multipleOf: 2 }, prompt: 'How many?' } },
    });
    expect(result).toMatchObject({ structuredContent: { answer: 4 } });
    expect(asked).toHaveLength(2);
    expect(asked[0]!.params).toMatchObject({ message: 'How many?', requestedSchema: { properties: { answer: { type: 'integer' } } } });
    expect(asked[1]!.params.message).toMatch(/refused/);
  });

  it('cancels a task that asks for input when the host declared no elicitation, saying why (spec: bridge-mcp-host#input)', async () => {
    const { mcp } = await mcpClient();
    const result = await mcp.callTool({ name: 'tap.test.ask', arguments: { input: { schema: { type: 'integer' }, prompt: 'How many?' } } });
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(/^cancelled: .*declared no elicitation capability/);
  });

  it('asks for plan approval by elicitation, or rejects every plan with plans: reject (spec: bridge-mcp-host#plans)', async () => {
    const { mcp } = await mcpClient({ elicit: () => ({ action: 'accept', content: { decision: 'approved' } }) });
    const approved = await mcp.callTool({ name: 'tap.test.plan', arguments: { input: { plan: PLAN } } });
    expect(approved.structuredContent).toEqual({ executed: ['write a', 'write b'] });
    const strict = await mcpClient({ elicit: () => ({ action: 'accept', content: { decision: 'approved' } }), host: { plans: 'reject' } });
    const rejected = await strict.mcp.callTool({ name: 'tap.test.plan', arguments: { input: { plan: PLAN } } });
    expect(rejected.isError).toBe(true);
    expect((rejected.content as Array<{ text: string }>)[0]!.text).toMatch(/^PLAN_REJECTED: /);
  });
});
