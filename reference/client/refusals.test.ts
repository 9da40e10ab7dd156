/** What `result` gives for a task the agent refused and for one that failed, as the README says (spec: errors). */
import { describe, expect, it } from 'vitest';
import { CapabilityError } from '../agent/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, TapClientError, type ConnectOptions } from './index.ts';
import { inMemory, REFERENCE_CARD } from './reference-agent.testkit.ts';

const { cleanups, agentWith, overMemory } = inMemory();

describe('the result of a refused task and of a failed one', () => {
  it('rejects with the refusal (INVALID_MESSAGE and its issues for input the schema refuses), and resolves failed for a CapabilityError', async () => {
    const agent = agentWith({
      card: { ...REFERENCE_CARD, capabilities: [] },
      capabilities: {
        'text.shout': {
          capability: {
            name: 'text.shout',
            version: '1.0.0',
            description: 'Upper-cases a text; refuses an empty one.',
            input_formats: ['json'],
            output_formats: ['json'],
            streaming: false,
            side_effects: false,
          },
          inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
          handler: (input: { text: string }) => {
            if (input.text === '') throw new CapabilityError('nothing to shout');
            return { text: input.text.toUpperCase() };
          },
        },
      },
    });
    const { client } = await overMemory(agent);

    expect((await client.submit('text.shout', { text: 'hi' }).result).output).toEqual({ text: 'HI' });
    const refused = await client.submit('text.shout', { words: 3 }).result.catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(TapClientError);
    expect((refused as TapClientError).code).toBe('INVALID_MESSAGE');
    expect((refused as TapClientError).payload?.details?.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ keyword: 'required' })]),
    );
    const unknown = await client.submit('text.whisper', { text: 'hi' }).result.catch((err: unknown) => err);
    expect((unknown as TapClientError).code).toBe('CAPABILITY_NOT_SUPPORTED');
    const failed = await client.submit('text.shout', { text: '' }).result;
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'CAPABILITY_FAILED', message: 'nothing to shout' } });
  });

  it('ends no process for a refusal nobody awaits: a refused task, and one whose session closed before its result', async () => {
    const unhandled: unknown[] = [];
    const hear = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', hear);
    cleanups.push(async () => void process.off('unhandledRejection', hear));
    const { client } = await overMemory(agentWith());
    // Neither `accepted` nor `result` of these handles is ever awaited.
    const refused = client.submit('no.such.capability', {});
    const cut = client.submit('tap.test.sleep', { ms: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([refused.settled, cut.settled]).toEqual([true, true]);
    expect(unhandled).toEqual([]);
  });

  it('refuses to connect without an agentId, or with a card the schema refuses, before sending anything', async () => {
    const sent: string[] = [];
    const attempt = (options: Partial<ConnectOptions>) => {
      const [, end] = createMemoryPair();
      const send = end.send.bind(end);
      end.send = (text) => {
        sent.push(text);
        return send(text);
      };
      return connect(end, options as ConnectOptions).catch((err: unknown) => err);
    };
    const none = await attempt({});
    expect(none).toBeInstanceOf(TypeError);
    expect((none as Error).message).toMatch(/options\.agentId/);
    const bad = await attempt({ agentId: 'Not An Id' });
    expect((bad as Error).message).toMatch(/the requester's card is invalid: \/agent_id/);
    expect(sent).toEqual([]);
  });
});
