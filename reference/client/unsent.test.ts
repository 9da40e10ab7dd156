/**
 * A request made while the session is down waits for a resume to send it; when no session ever
 * sends it, it fails as unsent (retryable, not indeterminate), for the agent cannot have seen it
 * (spec: mesh#moving, TAP-MESH-023).
 */
import { describe, expect, it } from 'vitest';
import { settle } from '../core/samples.testkit.ts';
import { createMemoryPair, type Transport } from '../transports/index.ts';
import { connectWith, type TapClient } from './index.ts';
import { ScriptedAgent } from './scripted-agent.testkit.ts';

/** A client whose first transport works and whose reconnects wait until the test lets them fail. */
async function droppable() {
  const ends: Transport[] = [];
  let agent: ScriptedAgent | undefined;
  let failReconnects!: () => void;
  const reconnectsFail = new Promise<void>((r) => (failReconnects = r));
  const wire: string[] = [];
  const factory = async (): Promise<Transport> => {
    if (agent) {
      await reconnectsFail;
      throw new Error('the agent is gone');
    }
    const [a, b] = createMemoryPair();
    ends.push(b);
    agent = new ScriptedAgent(b, { script: (msg, s) => msg.type === 'task.request' && s.accept(msg) });
    return a;
  };
  const client = await connectWith(factory, {
    agentId: 'test-requester',
    reconnect: { attempts: 2, baseMs: 1, maxMs: 2 },
    trace: (w) => w.dir === 'out' && wire.push(w.text),
  });
  const lost = new Promise((r) => client.on('lost', r));
  return { client, ends, wire, failReconnects, lost };
}

function requestOnWire(wire: string[], taskId: string): boolean {
  return wire.some((t) => t.includes('"task.request"') && t.includes(`"${taskId}"`));
}

async function submitWhileDown(client: TapClient, ends: Transport[], lost: Promise<unknown>) {
  const before = client.submit('demo.plan', {});
  await before.accepted;
  await ends[0]!.close({ code: 1006 });
  await lost;
  const during = client.submit('demo.plan', {});
  await settle();
  return { before, during };
}

describe('requests made while the session is down (spec: mesh#moving)', () => {
  it('fails a task whose request never went out as unsent, and one that went out as indeterminate, when the reconnect fails', async () => {
    const { client, ends, wire, failReconnects, lost } = await droppable();
    const { before, during } = await submitWhileDown(client, ends, lost);
    failReconnects();
    await expect(before.result).rejects.toMatchObject({ code: 'SESSION_LOST', indeterminate: true, unsent: false });
    await expect(during.result).rejects.toMatchObject({ indeterminate: false, unsent: true, retryable: true });
    expect(requestOnWire(wire, before.taskId)).toBe(true);
    expect(requestOnWire(wire, during.taskId)).toBe(false);
  });

  it('fails a task whose request never went out as unsent when the client is closed while it reconnects', async () => {
    const { client, ends, wire, failReconnects, lost } = await droppable();
    const { before, during } = await submitWhileDown(client, ends, lost);
    await client.close('the agent is counted lost');
    failReconnects();
    await expect(before.result).rejects.toMatchObject({ code: 'CLOSED', indeterminate: false, unsent: false });
    await expect(during.result).rejects.toMatchObject({ code: 'CLOSED', unsent: true, retryable: true });
    expect(requestOnWire(wire, during.taskId)).toBe(false);
  });
});

describe('requests on a closed client (spec: mesh#moving)', () => {
  it('refuses a task on a client that is already closed as unsent, sending nothing', async () => {
    const { client, wire } = await droppable();
    await client.close('done');
    const late = client.submit('demo.plan', {});
    await expect(late.result).rejects.toMatchObject({ code: 'CLOSED', unsent: true, indeterminate: false });
    expect(requestOnWire(wire, late.taskId)).toBe(false);
  });
});
