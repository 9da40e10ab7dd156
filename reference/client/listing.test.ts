/** listTasks and allTasks against the reference agent runtime (spec: tasks#listing). */
import { describe, expect, it } from 'vitest';
import { CapabilityError, createAgent, withConformanceCapabilities, type Agent } from '../agent/index.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, type ConnectOptions, type TapClient, type WireEntry } from './index.ts';
import { cleanupsAfterEach, REFERENCE_CARD } from './reference-agent.testkit.ts';

const card = REFERENCE_CARD;

const cleanups = cleanupsAfterEach();

function agent(): Agent {
  const a = createAgent({
    card,
    capabilities: withConformanceCapabilities({
      'repo.inspect': {
        capability: {
          name: 'repo.inspect',
          version: '1.0.0',
          description: 'Fails for a missing repository.',
          input_formats: ['json'],
          output_formats: ['json'],
          streaming: false,
          side_effects: false,
        },
        handler: (input: { repo: string }) => {
          throw new CapabilityError(`no repository ${input.repo}`, { details: { 'x-repo': input.repo } });
        },
      },
    }),
    logger: () => {},
  });
  cleanups.push(() => a.shutdown());
  return a;
}

async function client(a: Agent, options: Partial<ConnectOptions> = {}): Promise<{ client: TapClient; wire: WireEntry[] }> {
  const [mine, theirs] = createMemoryPair();
  a.attach(theirs);
  const wire: WireEntry[] = [];
  const c = await connect(mine, { agentId: 'test-requester', trace: (e) => wire.push(e), ...options });
  cleanups.push(() => c.close());
  return { client: c, wire };
}

describe('TapClient.listTasks and allTasks (spec: tasks#listing)', () => {
  it('lists a page with its cursor, and every task of the principal through allTasks', async () => {
    const { client: c } = await client(agent());
    for (let i = 0; i < 5; i++) await c.submit('tap.test.echo', i).result;
    await c.submit('tap.test.fail', { code: 'CAPABILITY_FAILED' }).result;
    const first = await c.listTasks({ limit: 2 });
    expect(first.tasks).toHaveLength(2);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await c.listTasks({ limit: 2, cursor: first.nextCursor });
    expect(second.tasks[0]!.task_id).not.toBe(first.tasks[1]!.task_id);
    const all = [];
    for await (const t of c.allTasks({ capability: 'tap.test.echo' })) all.push(t);
    expect(all.map((t) => t.state)).toEqual(['completed', 'completed', 'completed', 'completed', 'completed']);
    expect(new Set(all.map((t) => t.task_id)).size).toBe(5);
    const failed = (await c.listTasks({ state: 'failed' })).tasks;
    expect(failed.map((t) => t.capability)).toEqual(['tap.test.fail']);
  });

  it('rejects with the INVALID_CURSOR the agent sends for a cursor it did not give', async () => {
    const { client: c } = await client(agent());
    await expect(c.listTasks({ cursor: 'forged.cursor' })).rejects.toMatchObject({ code: 'INVALID_CURSOR', retryable: false });
  });

  it('sends no task.list in a session of 1.0', async () => {
    const { client: c, wire } = await client(agent(), { versions: ['1.0'] });
    await expect(c.listTasks()).rejects.toMatchObject({ code: 'UNKNOWN_MESSAGE_TYPE', unsent: true });
    expect(wire.some((e) => e.dir === 'out' && e.text.includes('"task.list"'))).toBe(false);
  });

  it("reports a handler's CapabilityError as CAPABILITY_FAILED in 1.1 and INTERNAL_ERROR in 1.0, not retryable (spec: errors#capability-failed)", async () => {
    const a = agent();
    const { client: newer } = await client(a);
    const result = await newer.submit('repo.inspect', { repo: 'gone' }).result;
    expect(result).toEqual({
      status: 'failed',
      error: { code: 'CAPABILITY_FAILED', message: 'no repository gone', retryable: false, details: { 'x-repo': 'gone' } },
    });
    const { client: older } = await client(a, { versions: ['1.0'] });
    const old = await older.submit('repo.inspect', { repo: 'gone' }).result;
    expect(old.error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: false });
  });
});
