import { afterEach, describe, expect, it } from 'vitest';
import { testAgent } from '../agent/peer.testkit.ts';
import { createMemoryPair } from '../transports/index.ts';
import { connect, type TapClient } from './index.ts';

const open: Array<{ close(): Promise<unknown> }> = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

/** A client on the reference agent in memory, recording what the agent sends. */
async function pair(
  versions?: string[],
  params: { request_timeout_ms?: number } = {},
): Promise<{ client: TapClient; seen: Array<{ type: string; sequence?: number; task_id?: string }> }> {
  const agent = testAgent();
  const [agentEnd, clientEnd] = createMemoryPair();
  const seen: Array<{ type: string; sequence?: number; task_id?: string }> = [];
  const send = agentEnd.send.bind(agentEnd);
  agentEnd.send = (text: string) => {
    seen.push(JSON.parse(text));
    return send(text);
  };
  agent.attach(agentEnd);
  const client = await connect(clientEnd, { agentId: 'quiet.requester', params, ...(versions ? { versions } : {}) });
  open.push({ close: () => agent.shutdown() }, client);
  return { client, seen };
}

describe('quiet tasks through the client (spec: tasks#quiet-tasks)', () => {
  it('submit(..., { quiet: true }) sends quiet and resolves the result from the one message the task sends', async () => {
    const { client, seen } = await pair();
    expect(client.handshake.version).toBe('1.1');
    const h = client.submit('tap.test.echo', { hi: 1 }, { quiet: true });
    expect(await h.result).toEqual({ status: 'completed', output: { hi: 1 } });
    expect((await h.accepted).taskId).toBe(h.taskId);
    expect(seen.filter((m) => m.task_id === h.taskId).map((m) => `${m.type}@${m.sequence}`)).toEqual(['task.result@2']);
    expect(h.state).toBe('completed');
  });

  it('cancels and asks the status of a running quiet task', async () => {
    const { client } = await pair();
    const h = client.submit('tap.test.sleep', { ms: 30_000 }, { quiet: true });
    const snap = await h.status();
    expect(snap.last_sequence).toBe(1);
    await h.cancel('not needed');
    expect((await h.result).status).toBe('cancelled');
  });

  it('asks by task.status for a quiet task that sent nothing within request_timeout_ms, and follows it to its result (spec: tasks#quiet-requests)', async () => {
    const { client, seen } = await pair(undefined, { request_timeout_ms: 50 });
    const h = client.submit('tap.test.sleep', { ms: 400 }, { quiet: true });
    expect((await h.result).status).toBe('completed');
    const answers = seen.filter((m) => m.task_id === h.taskId).map((m) => m.type);
    expect(answers[0]).toBe('task.snapshot');
    expect(answers.at(-1)).toBe('task.result');
  });

  it('sends no quiet member in a session of 1.0 and follows the full stream', async () => {
    const { client, seen } = await pair(['1.0']);
    const h = client.submit('tap.test.echo', { hi: 2 }, { quiet: true });
    expect((await h.result).status).toBe('completed');
    expect(seen.filter((m) => m.task_id === h.taskId).map((m) => m.type)).toEqual(['task.accepted', 'task.event', 'task.result']);
  });
});
