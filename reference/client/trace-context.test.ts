/**
 * Extensions and the trace context between the client and the reference agent, in sessions of
 * 1.1 and of 1.0 (spec: handshake#negotiated-extensions, envelope#trace-context, versioning#tap-1-1).
 */
import { describe, expect, it } from 'vitest';
import { CONFORMANCE_EXTENSION, withConformanceCapabilities, type Agent } from '../agent/index.ts';
import { childTraceContext, parseTraceparent } from '../core/index.ts';
import { randomBytes } from '../crypto.ts';
import type { ConnectOptions } from './index.ts';
import { inMemory } from './reference-agent.testkit.ts';

const STAMP = CONFORMANCE_EXTENSION.uri;
const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const random = randomBytes;

const memory = inMemory({ extensions: [CONFORMANCE_EXTENSION] });
const { agentWith } = memory;

/** A client in memory whose wire reads as messages, by direction. */
async function overMemory(agent: Agent, options: Partial<ConnectOptions> = {}) {
  const { client, wire } = await memory.overMemory(agent, options);
  const messages = (dir: 'in' | 'out') =>
    wire
      .filter((e) => e.dir === dir)
      .map((e) => JSON.parse(e.text) as { type: string; metadata?: Record<string, unknown>; payload: Record<string, unknown> });
  return { client, messages };
}

describe('negotiated extensions', () => {
  it('a session of 1.1 uses an offered extension the agent supports, and shows it on the handshake', async () => {
    const { client, messages } = await overMemory(agentWith(), { extensions: [{ uri: STAMP }, { uri: 'urn:example:unknown' }] });
    expect(client.handshake.extensions).toEqual([STAMP]);
    const ack = messages('in').find((m) => m.type === 'handshake.ack')!;
    expect((ack.payload.agent as { extensions?: unknown }).extensions).toEqual([
      { uri: STAMP, description: CONFORMANCE_EXTENSION.description },
    ]);
    const h = client.submit('tap.test.echo', 1);
    await h.result;
    const stream = messages('in').filter((m) => m.type === 'task.accepted' || m.type === 'task.result');
    expect(stream.map((m) => m.metadata?.['tap-test-stamp'])).toEqual([STAMP, STAMP]);
  });

  it('a session that does not use the extension carries none of its members', async () => {
    const { client, messages } = await overMemory(agentWith());
    expect(client.handshake.extensions).toEqual([]);
    await client.submit('tap.test.echo', 1).result;
    expect(messages('in').some((m) => m.metadata?.['tap-test-stamp'] !== undefined)).toBe(false);
  });

  it('a required extension the agent lacks fails connect with EXTENSION_REQUIRED naming it', async () => {
    await expect(overMemory(agentWith(), { extensions: [{ uri: 'urn:example:needed', required: true }] })).rejects.toThrow(
      /EXTENSION_REQUIRED|urn:example:needed/,
    );
  });

  it("the agent's own required extension refuses a requester that does not offer it, and takes one that does", async () => {
    const agent = agentWith({ extensions: [{ ...CONFORMANCE_EXTENSION, required: true }] });
    await expect(overMemory(agent)).rejects.toThrow(/urn:tap:test:stamp/);
    const { client } = await overMemory(agent, { extensions: [{ uri: STAMP }] });
    expect(client.handshake.extensions).toEqual([STAMP]);
  });

  it('a session of 1.0 negotiates nothing: no extensions in the ack or the card, and a required one ends connect', async () => {
    const { client, messages } = await overMemory(agentWith(), { versions: ['1.0'], extensions: [{ uri: STAMP }] });
    expect(client.handshake.version).toBe('1.0');
    expect(client.handshake.extensions).toEqual([]);
    const ack = messages('in').find((m) => m.type === 'handshake.ack')!;
    expect(ack.payload.extensions).toBeUndefined();
    expect((ack.payload.agent as { extensions?: unknown }).extensions).toBeUndefined();
    await expect(overMemory(agentWith(), { versions: ['1.0'], extensions: [{ uri: STAMP, required: true }] })).rejects.toThrow(
      /required extensions/,
    );
  });
});

describe('trace context', () => {
  it('in 1.1 the client starts a trace for a new task, carries it on requests about the task, and the agent on its stream', async () => {
    const { client, messages } = await overMemory(agentWith());
    const h = client.submit('tap.test.sleep', { ms: 50 }, { metadata: { baggage: 'k=v' } });
    await h.accepted;
    await h.status();
    await h.result;
    const request = messages('out').find((m) => m.type === 'task.request')!;
    const tp = request.metadata?.traceparent;
    expect(parseTraceparent(tp)).not.toBeNull();
    const status = messages('out').find((m) => m.type === 'task.status')!;
    expect(status.metadata).toMatchObject({ traceparent: tp, baggage: 'k=v' });
    const stream = messages('in').filter((m) => ['task.accepted', 'task.event', 'task.result'].includes(m.type));
    expect(stream.length).toBeGreaterThan(1);
    for (const m of stream) expect(m.metadata).toMatchObject({ traceparent: tp, baggage: 'k=v' });
  });

  it("in 1.1 the client keeps the caller's traceparent, and builds one from a W3C trace_id and span_id", async () => {
    const { client, messages } = await overMemory(agentWith());
    await client.submit('tap.test.echo', 1, { metadata: { traceparent: TP } }).result;
    await client.submit('tap.test.echo', 2, { metadata: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' } })
      .result;
    const requests = messages('out').filter((m) => m.type === 'task.request');
    expect(requests.map((m) => m.metadata?.traceparent)).toEqual([TP, TP]);
  });

  it('in 1.0 neither side sends the trace context of 1.1', async () => {
    const { client, messages } = await overMemory(agentWith(), { versions: ['1.0'] });
    await client.submit('tap.test.echo', 1, { metadata: { traceparent: TP, trace_id: 't-1' } }).result;
    const all = [...messages('out'), ...messages('in')];
    expect(all.some((m) => m.metadata?.traceparent !== undefined)).toBe(false);
    expect(messages('in').find((m) => m.type === 'task.result')!.metadata).toEqual({ trace_id: 't-1' });
  });

  it("gives a handler the request's trace context, from which a sub-task keeps the trace with a span of its own (TAP-TRACE-105)", async () => {
    const agent = agentWith({
      capabilities: {
        ...withConformanceCapabilities(),
        'demo.delegate': {
          capability: {
            name: 'demo.delegate',
            version: '1.0.0',
            description: 'Shows the trace context a sub-task would get.',
            input_formats: ['json'],
            output_formats: ['json'],
            streaming: false,
            side_effects: false,
          },
          handler: (_input: unknown, ctx) => ({
            seen: ctx.traceContext,
            child: ctx.traceContext && childTraceContext(ctx.traceContext, random),
          }),
        },
      },
    });
    const { client } = await overMemory(agent);
    const result = await client.submit('demo.delegate', null, { metadata: { traceparent: TP, tracestate: 'rojo=1' } }).result;
    const out = result.output as { seen: { traceparent: string }; child: { traceparent: string; tracestate: string } };
    expect(out.seen).toEqual({ traceparent: TP, tracestate: 'rojo=1' });
    const child = parseTraceparent(out.child.traceparent)!;
    expect(child.traceId).toBe(parseTraceparent(TP)!.traceId);
    expect(child.parentId).not.toBe(parseTraceparent(TP)!.parentId);
    expect(out.child.tracestate).toBe('rojo=1');
  });
});
