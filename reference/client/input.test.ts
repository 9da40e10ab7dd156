/**
 * TAP 1.1 input required from the requester's side: the 'input' event, handle.pendingInput and
 * handle.answer, and the onInput callback, against the reference agent runtime in memory.
 */
import { describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../agent/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, type ConnectOptions, type TapClient } from './index.ts';
import { cleanupsAfterEach, REFERENCE_CARD } from './reference-agent.testkit.ts';

const card = REFERENCE_CARD;
const SCHEMA = { type: 'integer', minimum: 1 };

const cleanups = cleanupsAfterEach();

async function client(options: Partial<ConnectOptions> = {}): Promise<TapClient> {
  const agent = createAgent({ card, capabilities: withConformanceCapabilities(), logger: () => {} });
  cleanups.push(() => agent.shutdown());
  const [a, b] = createMemoryPair();
  agent.attach(b);
  const c = await connect(a, { agentId: 'test-requester', ...options });
  cleanups.push(() => c.close());
  return c;
}

describe('input required from the client (spec: tasks#input-required)', () => {
  it("emits 'input' with the request; a refused answer rejects with INVALID_ANSWER and a matching one completes the task", async () => {
    const c = await client();
    const asked = new Promise<{ taskId: string; request: { request_id: string; prompt: string } }>((resolve) => c.on('input', resolve));
    const h = c.submit('tap.test.ask', { schema: SCHEMA, prompt: 'How many?' });
    const event = await asked;
    expect(event.taskId).toBe(h.taskId);
    expect(event.request).toMatchObject({ prompt: 'How many?', schema: SCHEMA });
    expect(h.state).toBe('input_required');
    expect(h.pendingInput?.request_id).toBe(event.request.request_id);
    await expect(h.answer(0)).rejects.toMatchObject({ code: 'INVALID_ANSWER' });
    expect(h.pendingInput?.request_id).toBe(event.request.request_id);
    const snapshot = await h.answer(3);
    expect(snapshot.state).toBe('input_required');
    expect(await h.result).toEqual({ status: 'completed', output: { answer: 3 } });
    expect(h.pendingInput).toBeUndefined();
  });

  it('answers through the onInput callback', async () => {
    const c = await client();
    const h = c.submit('tap.test.ask', { schema: SCHEMA }, { onInput: (request) => (request.schema === true ? 0 : 7) });
    expect(await h.result).toEqual({ status: 'completed', output: { answer: 7 } });
  });

  it('refuses to answer a task that waits for no input, naming what to wait for', async () => {
    const c = await client();
    const h = c.submit('tap.test.echo', 1);
    await h.result;
    await expect(h.answer(1)).rejects.toThrow(/waits for no input/);
  });

  it('in a session of 1.0 the task ends failed CAPABILITY_NOT_SUPPORTED and no input event comes', async () => {
    const c = await client({ versions: ['1.0'] });
    let asked = false;
    c.on('input', () => (asked = true));
    const result = await c.submit('tap.test.ask', { schema: SCHEMA }).result;
    expect(result).toMatchObject({ status: 'failed', error: { code: 'CAPABILITY_NOT_SUPPORTED' } });
    expect(asked).toBe(false);
  });
});
