/**
 * Handler mistakes a capability author makes, seen from the requester: each task still ends, with
 * an error that says what was wrong, and nothing the schema refuses reaches the wire (spec:
 * envelope#encoding, tasks#input-required).
 */
import { describe, expect, it } from 'vitest';
import type { Capability } from '../../schemas/src/index.ts';
import { createAgent, type TaskContext } from '../agent/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, TapClientError, type ConnectOptions } from './index.ts';
import { inMemory, REFERENCE_CARD } from './reference-agent.testkit.ts';

const { agentWith, overMemory } = inMemory();

function capability(name: string): Capability {
  return {
    name,
    version: '1.0.0',
    description: name,
    input_formats: ['json'],
    output_formats: ['json'],
    streaming: false,
    side_effects: false,
  };
}

/** An agent whose one capability `demo.run` is `handler`, and a client connected to it. */
async function serving(handler: (input: unknown, ctx: TaskContext) => unknown) {
  const warnings: string[] = [];
  const agent = agentWith({
    card: { ...REFERENCE_CARD, capabilities: [] },
    capabilities: { 'demo.run': { capability: capability('demo.run'), handler } },
    logger: (level, message) => void (level === 'warn' && warnings.push(message)),
  });
  return { ...(await overMemory(agent)), warnings };
}

describe('a handler whose output JSON cannot carry', () => {
  it.each([
    ['a BigInt', () => ({ n: 10n }), /^the handler's output is not JSON at \/n: a BigInt/],
    [
      'a circular object',
      () => {
        const o: Record<string, unknown> = {};
        o.self = o;
        return o;
      },
      /^the handler's output is not JSON at \/self(\/self)*: nesting deeper than 64 levels, or holds itself$/,
    ],
    ['NaN', () => ({ mean: Number.NaN }), /^the handler's output is not JSON at \/mean: NaN is no JSON number/],
    ['a toJSON that gives a BigInt', () => ({ sum: { toJSON: () => 3n } }), /^the handler's output is not JSON at \/sum: a BigInt/],
    [
      'a toJSON that throws',
      () => ({
        toJSON: () => {
          throw new Error('no');
        },
      }),
      /^the handler's output is not JSON: reading it to write it threw: no$/,
    ],
  ])('ends the task failed, saying so, for %s', async (_what, handler, message) => {
    const { client, wire, warnings } = await serving(handler);
    const result = await client.submit('demo.run', {}).result;
    expect(result).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR', retryable: false } });
    expect(result.error?.message).toMatch(message);
    expect(warnings.some((w) => w.includes('the handler returned an output JSON cannot carry'))).toBe(true);
    expect(wire.filter((e) => e.text.includes('"type":"error"'))).toEqual([]);
  });
});

describe('an output JSON writes its own way', () => {
  it('completes as JSON.stringify writes it: a Date as its ISO text, an undefined member left out', async () => {
    const { client } = await serving(() => ({ at: new Date(0), gone: undefined }));
    expect(await client.submit('demo.run', {}).result).toMatchObject({ status: 'completed', output: { at: '1970-01-01T00:00:00.000Z' } });
  });
});

describe('an input request without its prompt', () => {
  it('is refused to the handler before anything is sent, and the task still ends', async () => {
    let refusal: unknown;
    const { client, wire } = await serving(async (_input, ctx) => {
      refusal = await ctx.askInput({ schema: { type: 'integer' } } as never).catch((err: unknown) => err);
      throw refusal;
    });
    const result = await client.submit('demo.run', {}).result;
    expect(refusal).toBeInstanceOf(TypeError);
    expect((refusal as Error).message).toMatch(
      /^the input request is invalid \(askInput takes \{ prompt, schema \}\): \/prompt must have required property 'prompt'/,
    );
    expect(result).toMatchObject({ status: 'failed', error: { code: 'INTERNAL_ERROR' } });
    expect(wire.some((e) => e.text.includes('"type":"input.request"'))).toBe(false);
  });
});

describe('a message of a task that its schema refuses', () => {
  it('ends that task at the requester with INVALID_MESSAGE instead of leaving its result pending', async () => {
    const agent = agentWith();
    const [a, b] = createMemoryPair();
    // The agent's output events lose their kind on the way: a broken agent.
    const send = b.send.bind(b);
    b.send = (text) => send(text.includes('"kind":"output"') ? text.replace('"kind":"output"', '"kind":"bogus"') : text);
    agent.attach(b);
    const client = await connect(a, { agentId: 'test-requester' });
    client.on('error', () => {});
    try {
      const handle = client.submit('tap.test.stream', { count: 3, interval_ms: 10 });
      const outcome = await handle.result.catch((err: unknown) => err);
      expect(outcome).toBeInstanceOf(TapClientError);
      expect(outcome).toMatchObject({ code: 'INVALID_MESSAGE', indeterminate: true, taskId: handle.taskId });
      expect((outcome as Error).message).toMatch(/that its schema refuses .*; the task's outcome is unknown$/);
    } finally {
      await client.close();
    }
  });
});

describe('a handler that does not watch its signal, as the README says', () => {
  const ignoring = async (): Promise<unknown> => {
    await new Promise((r) => setTimeout(r, 1_000));
    return { done: true };
  };

  it('ends its cancelled task completed when it returns within cancelGraceMs, and cancelled past it', async () => {
    for (const [grace, status] of [
      [5_000, 'completed'],
      [100, 'cancelled'],
    ] as const) {
      const agent = agentWith({
        card: { ...REFERENCE_CARD, capabilities: [] },
        capabilities: { 'demo.run': { capability: capability('demo.run'), handler: ignoring } },
        cancelGraceMs: grace,
      });
      const { client } = await overMemory(agent);
      const handle = client.submit('demo.run', {});
      await handle.accepted;
      await new Promise((r) => setTimeout(r, 50));
      await handle.cancel();
      expect((await handle.result).status).toBe(status);
    }
  });
});

describe('set-up mistakes', () => {
  it('an agent whose capability has no handler does not start', () => {
    expect(() =>
      createAgent({
        card: { ...REFERENCE_CARD, capabilities: [] },
        capabilities: { 'demo.run': { capability: capability('demo.run') } as never },
      }),
    ).toThrow('capability demo.run has no handler: give it as { capability, handler }, handler a function');
  });

  it('a logger that is no function is refused at once, by the agent and by the client', async () => {
    expect(() => createAgent({ card: { ...REFERENCE_CARD, capabilities: [] }, capabilities: {}, logger: console as never })).toThrow(
      'createAgent: options.logger must be a function (level, message, fields?) => void',
    );
    const [end] = createMemoryPair();
    await expect(connect(end, { agentId: 'a.requester', logger: console as never })).rejects.toThrow(
      'connect: options.logger must be a function (level, message, fields?) => void',
    );
  });

  it('connect with no options at all names agentId', async () => {
    const [end] = createMemoryPair();
    const err = await connect(end, undefined as unknown as ConnectOptions).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toMatch(/^connect needs options\.agentId/);
  });
});
