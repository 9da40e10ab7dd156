import { describe, expect, it } from 'vitest';
import { composeMessage } from '../core/index.ts';
import { createMemoryPair, type MemoryTransport, type Transport } from '../transports/index.ts';
import { connect, connectWith, type ClientProblem, type ConnectOptions, type TapClient } from './index.ts';
import { ScriptedAgent, type Script } from './scripted-agent.testkit.ts';
import { ManualClock, settle } from '../core/samples.testkit.ts';

const base: ConnectOptions = { agentId: 'test-requester' };

async function setup(
  script: Script,
  options: Partial<ConnectOptions> = {},
  agentOptions: ConstructorParameters<typeof ScriptedAgent>[1] = {},
) {
  const [a, b] = createMemoryPair();
  const agent = new ScriptedAgent(b, { script, ...agentOptions });
  const client = await connect(a, { ...base, ...options });
  const problems: ClientProblem[] = [];
  client.on('error', (p) => problems.push(p));
  return { agent, client, problems };
}

describe('bad input from the agent', () => {
  it('answers a malformed frame with MALFORMED_MESSAGE, reports it, and carries on (spec: errors#order-of-checks)', async () => {
    const { agent, client, problems } = await setup(() => {});
    agent.raw('{"not json');
    agent.raw('[1,2]');
    await settle();
    expect(agent.of('error').map((e) => e.payload.code)).toEqual(['MALFORMED_MESSAGE', 'MALFORMED_MESSAGE']);
    expect(problems.map((p) => p.error.code)).toEqual(['MALFORMED_MESSAGE', 'MALFORMED_MESSAGE']);
    expect(client.isOpen).toBe(true);
    expect(agent.violations).toEqual([]);
    await client.close();
  });

  it('answers a frame 5 000 levels deep with MALFORMED_MESSAGE and carries on (spec: limits#nesting)', async () => {
    const { agent, client, problems } = await setup(() => {});
    agent.raw(`{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`);
    await settle();
    expect(agent.of('error').map((e) => [e.payload.code, (e.payload.details as { reason?: string } | undefined)?.reason])).toEqual([
      ['MALFORMED_MESSAGE', 'nesting'],
    ]);
    expect(problems.map((p) => p.error.code)).toEqual(['MALFORMED_MESSAGE']);
    expect(client.isOpen).toBe(true);
    await client.close();
  });

  it('refuses a schema violation, a forged source, a wrong session and an unknown type, each with its code', async () => {
    const { agent, client, problems } = await setup(() => {});
    const s = agent.session!;
    const msg = (fields: Record<string, unknown>) =>
      JSON.stringify(
        composeMessage({ protocol: s.protocol }, {
          source: 'scripted-agent',
          target: 'test-requester',
          session_id: s.sessionId,
          ...fields,
        } as never),
      );
    agent.raw(msg({ type: 'task.event', task_id: 'task-x', sequence: 2, payload: { kind: 'bogus' } }));
    agent.raw(msg({ type: 'session.farewell', source: 'someone-else', payload: { reason: 'forged' } }));
    agent.raw(msg({ type: 'session.farewell', session_id: 'AAAAAAAAAAAAAAAAAAAAAAAA', payload: { reason: 'other session' } }));
    agent.raw(msg({ type: 'task.wobble', payload: {} }));
    agent.raw(msg({ type: 'task.request', task_id: 'task-y', payload: { capability: 'a.b', input: 1 } }));
    await settle();
    expect(agent.of('error').map((e) => e.payload.code)).toEqual([
      'INVALID_MESSAGE',
      'IDENTITY_MISMATCH',
      'PROTOCOL_VIOLATION',
      'UNKNOWN_MESSAGE_TYPE',
      'UNKNOWN_MESSAGE_TYPE',
    ]);
    expect(problems).toHaveLength(5);
    // A forged farewell never ends the session (spec: identity#forgery).
    expect(client.isOpen).toBe(true);
    await client.close();
  });

  it('never answers an error, even a bad one', async () => {
    const { agent, client, problems } = await setup(() => {});
    const s = agent.session!;
    agent.raw(
      JSON.stringify(
        composeMessage(
          { protocol: s.protocol },
          {
            type: 'error',
            source: 'scripted-agent',
            target: 'test-requester',
            session_id: s.sessionId,
            payload: { code: 'INTERNAL_ERROR', message: 'oops', retryable: true },
          },
        ),
      ),
    );
    agent.raw(JSON.stringify({ protocol: 'tap/1.0', type: 'error', message_id: 'x', payload: 'nope' }));
    await settle();
    expect(agent.of('error')).toHaveLength(0);
    expect(problems.map((p) => p.error.code)).toEqual(['INTERNAL_ERROR', 'INVALID_MESSAGE']);
    await client.close();
  });

  it('drops a duplicate message_id without a second effect', async () => {
    const { agent, client } = await setup((msg, a) => {
      if (msg.type !== 'task.request') return;
      a.accept(msg);
      const e = a.event(msg.task_id!, { kind: 'log', message: 'once' });
      a.raw(JSON.stringify(e));
      a.result(msg.task_id!, { status: 'completed', output: null });
    });
    const h = client.submit('demo.echo', null);
    await h.result;
    expect(h.log.filter((m) => m.type === 'task.event')).toHaveLength(1);
    expect(agent.of('error')).toHaveLength(0);
    await client.close();
  });

  it('asks task.resume when a sequence goes missing, and delivers in order once the gap is filled', async () => {
    let held = '';
    const { agent, client } = await setup((msg, a) => {
      if (msg.type === 'task.request') {
        a.accept(msg);
        const saved = a.raw.bind(a);
        a.raw = (t) => void (held = t);
        a.event(msg.task_id!, { kind: 'progress', percent: 10 });
        a.raw = saved;
        a.result(msg.task_id!, { status: 'completed', output: 2 });
      } else if (msg.type === 'task.resume') {
        a.snapshot(msg, {
          state: 'completed',
          capability: 'demo.echo',
          last_sequence: 3,
          created_at: msg.timestamp,
          updated_at: msg.timestamp,
        });
        a.raw(held);
      }
    });
    const h = client.submit('demo.echo', 2);
    await h.result;
    expect(agent.of('task.resume')[0]!.payload).toEqual({ last_sequence: 1 });
    expect(h.log.map((m) => m.sequence)).toEqual([1, 2, 3]);
    await client.close();
  });
});

describe('liveness', () => {
  it('answers pings with pongs, and a repeated ping with the same pong', async () => {
    const { agent, client } = await setup(() => {});
    const ping = agent.send('ping', {});
    agent.raw(JSON.stringify(ping));
    await settle();
    const pongs = agent.of('pong');
    expect(pongs).toHaveLength(2);
    expect(pongs[0]!.reply_to).toBe(ping.message_id);
    expect(pongs[1]).toEqual(pongs[0]);
    await client.close();
  });

  it('pings after heartbeat_ms of silence and counts the agent lost after three missed pings (spec: limits#heartbeats)', async () => {
    const clock = new ManualClock();
    const [a, b] = createMemoryPair();
    const agent = new ScriptedAgent(b, { heartbeatMs: 1000 });
    // This agent never answers pings.
    const take = (agent as unknown as { take: (m: unknown) => void }).take.bind(agent);
    (agent as unknown as { take: (m: { type: string }) => void }).take = (m) => {
      if (m.type !== 'ping') take(m);
    };
    const connecting = connect(a, { ...base, clock, params: { heartbeat_ms: 1000 } });
    await clock.advance(0);
    const client = await connecting;
    const h = client.submit('demo.echo', 1);
    const closed = new Promise((r) => client.on('closed', r));
    await clock.advance(999);
    expect(agent.of('ping')).toHaveLength(0);
    await clock.advance(1);
    expect(agent.of('ping')).toHaveLength(1);
    await clock.advance(2000);
    expect(agent.of('ping')).toHaveLength(3);
    await clock.advance(1000);
    await closed;
    await expect(h.result).rejects.toMatchObject({ code: 'SESSION_LOST', indeterminate: true });
  });

  it('counts any message as a sign of life', async () => {
    const clock = new ManualClock();
    const [a, b] = createMemoryPair();
    const agent = new ScriptedAgent(b, { heartbeatMs: 1000 });
    const connecting = connect(a, { ...base, clock, params: { heartbeat_ms: 1000 } });
    await clock.advance(0);
    const client = await connecting;
    for (let i = 0; i < 5; i++) {
      await clock.advance(900);
      agent.send('session.farewell', { reason: 'x' }).message_id; // any message will do; this one is forged below
    }
    // The farewell above is a real farewell from the agent: the client ends the session.
    await settle();
    expect(client.isOpen).toBe(false);
    expect(agent.of('ping')).toHaveLength(0);
  });
});

describe('shutdown', () => {
  it('shutdownAgent: request → response → hand-offs and results → farewell (spec: shutdown)', async () => {
    const { agent, client } = await setup(
      (msg, a) => {
        if (msg.type === 'task.request') {
          a.accept(msg);
          a.event(msg.task_id!, { kind: 'state', state: 'running' });
        } else if (msg.type === 'shutdown.request') {
          a.send('shutdown.response', { approve: true }, { reply_to: msg.message_id });
          for (const r of agent.of('task.request')) {
            a.send(
              'task.handoff',
              { checkpoint: { done: 1 }, completed_steps: ['a'], remaining_steps: ['b'], resume_hint: 'continue at b' },
              { task_id: r.task_id! },
            );
            a.event(r.task_id!, { kind: 'state', state: 'cancelling' });
            a.result(r.task_id!, { status: 'cancelled', error: { code: 'SHUTTING_DOWN', message: 'shutting down', retryable: true } });
          }
          a.send('session.farewell', { reason: 'shutdown requested' });
        }
      },
      { retry: { baseMs: 1 } },
    );
    const h = client.submit('demo.slow', {});
    await h.accepted;
    const out = await client.shutdownAgent({ reason: 'maintenance', graceMs: 1000 });
    expect(out.approved).toBe(true);
    expect(out.farewell).toBe('shutdown requested');
    expect(out.handoffs).toEqual([{ taskId: h.taskId, handoff: expect.objectContaining({ resume_hint: 'continue at b' }) }]);
    const r = await h.result;
    expect(r).toMatchObject({ status: 'cancelled', error: { code: 'SHUTTING_DOWN' } });
    expect(h.handoff?.remaining_steps).toEqual(['b']);
    // A handed-off task is not retried.
    expect(agent.of('task.request')).toHaveLength(1);
    expect(agent.of('shutdown.request')[0]!.payload).toEqual({ reason: 'maintenance', grace_ms: 1000 });
    expect(client.isOpen).toBe(false);
  });

  it('reports a declined shutdown and keeps the session', async () => {
    const { client } = await setup((msg, a) => {
      if (msg.type === 'shutdown.request') a.send('shutdown.response', { approve: false, reason: 'busy' }, { reply_to: msg.message_id });
    });
    expect(await client.shutdownAgent({ reason: 'x', graceMs: 10 })).toEqual({ approved: false, reason: 'busy', handoffs: [] });
    expect(client.isOpen).toBe(true);
    await client.close();
  });

  it('close sends session.farewell and fails handles that are still open', async () => {
    const { agent, client } = await setup((msg, a) => {
      if (msg.type === 'task.request') a.accept(msg);
    });
    const h = client.submit('demo.slow', {});
    await h.accepted;
    await client.close('done for today');
    expect(agent.of('session.farewell')[0]!.payload).toEqual({ reason: 'done for today' });
    await expect(h.result).rejects.toMatchObject({ code: 'CLOSED' });
  });
});

describe('reconnect and resume over a transport factory', () => {
  async function reconnecting(agentOptions: ConstructorParameters<typeof ScriptedAgent>[1] = {}) {
    const ends: Transport[] = [];
    let agent: ScriptedAgent | undefined;
    const factory = async () => {
      const [a, b] = createMemoryPair();
      ends.push(b);
      if (agent) agent.bind(b);
      else agent = new ScriptedAgent(b, agentOptions);
      return a;
    };
    const client = await connectWith(factory, { ...base, reconnect: { baseMs: 1, maxMs: 2 } });
    return { client, agent: agent!, ends };
  }

  it('resumes with each open task and its last sequence, re-sends unanswered requests, and loses nothing', async () => {
    const { client, agent, ends } = await reconnecting();
    let streamed = 0;
    agent.script = (msg, a) => {
      if (msg.type === 'task.request') {
        a.accept(msg);
        a.event(msg.task_id!, { kind: 'output', data: streamed++ });
      }
    };
    const h = client.submit('demo.echo', 1);
    await h.accepted;
    await settle();
    // The transport drops; meanwhile the agent produced two more messages the client never saw.
    const reconnected = new Promise((r) => client.on('reconnected', r));
    await ends[0]!.close({ code: 1006 });
    const taskId = h.taskId;
    const missed = [JSON.stringify({ seq: 3 })];
    void missed;
    agent.script = (msg, a) => {
      if (msg.type === 'task.status') {
        a.snapshot(msg, {
          state: 'running',
          capability: 'demo.echo',
          last_sequence: 2,
          created_at: msg.timestamp,
          updated_at: msg.timestamp,
        });
      }
    };
    const status = h.status();
    await reconnected;
    const init = agent.of('handshake.init').at(-1)!;
    expect(init.payload.resume).toEqual({
      session_id: client.handshake.sessionId,
      resume_token: expect.any(String),
      tasks: [{ task_id: taskId, last_sequence: 2 }],
    });
    // The status request sent while disconnected went out after the resume, once.
    expect((await status).state).toBe('running');
    expect(agent.of('task.status')).toHaveLength(1);
    // Replay and live messages after the reconnect arrive in order; a replayed duplicate is dropped.
    const e2 = agent.received.length;
    void e2;
    agent.event(taskId, { kind: 'output', data: 'after' });
    agent.result(taskId, { status: 'completed', output: 'done' });
    expect(await h.result).toEqual({ status: 'completed', output: 'done' });
    expect(h.log.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
    await client.close();
  });

  it('fails the open handles with RESUME_UNAVAILABLE when the agent declines the resume', async () => {
    const { client, agent, ends } = await reconnecting({ allowResume: false });
    agent.script = (msg, a) => {
      if (msg.type === 'task.request') a.accept(msg);
    };
    const h = client.submit('demo.slow', 1);
    await h.accepted;
    const before = client.handshake.sessionId;
    const reconnected = new Promise<{ resumed: boolean }>((r) => client.on('reconnected', r));
    await ends[0]!.close({ code: 1006 });
    expect((await reconnected).resumed).toBe(false);
    await expect(h.result).rejects.toMatchObject({ code: 'RESUME_UNAVAILABLE', indeterminate: true });
    expect(client.handshake.sessionId).not.toBe(before);
    // The new session works.
    agent.script = (msg, a) => {
      if (msg.type === 'task.request') {
        a.accept(msg);
        a.result(msg.task_id!, { status: 'completed', output: 'fresh' });
      }
    };
    expect(await client.submit('demo.echo', 2).result).toEqual({ status: 'completed', output: 'fresh' });
    await client.close();
  });
});

describe('resume edge cases', () => {
  it('fails a handle the agent answers RESUME_UNAVAILABLE for after a reconnect (spec: resume#reconnect)', async () => {
    const ends: Transport[] = [];
    let agent: ScriptedAgent | undefined;
    const factory = async () => {
      const [a, b] = createMemoryPair();
      ends.push(b);
      if (agent) agent.bind(b);
      else agent = new ScriptedAgent(b);
      return a;
    };
    const client = await connectWith(factory, { ...base, reconnect: { baseMs: 1, maxMs: 2 } });
    agent!.script = (msg, a) => {
      if (msg.type === 'task.request') a.accept(msg);
    };
    const h = client.submit('demo.slow', 1);
    await h.accepted;
    await ends[0]!.close({ code: 1006 });
    await new Promise((r) => client.on('reconnected', r));
    const s = agent!.session!;
    agent!.raw(
      JSON.stringify(
        composeMessage(
          { protocol: s.protocol },
          {
            type: 'error',
            source: 'scripted-agent',
            target: 'test-requester',
            session_id: s.sessionId,
            task_id: h.taskId,
            payload: { code: 'RESUME_UNAVAILABLE', message: 'no longer retained', retryable: false, details: { earliest_sequence: 5 } },
          },
        ),
      ),
    );
    await expect(h.result).rejects.toMatchObject({ code: 'RESUME_UNAVAILABLE', indeterminate: true });
    expect(client.isOpen).toBe(true);
    await client.close();
  });

  it("accepts a followed task's replay that carries the session it was first sent in, and nothing else from another session", async () => {
    const { agent, client, problems } = await setup((msg, a) => {
      if (msg.type === 'task.request') a.accept(msg);
    });
    const h = client.submit('demo.slow', 1);
    await h.accepted;
    const s = agent.session!;
    const old = 'OLDSESSIONOLDSESSION0123';
    const replay = (fields: Record<string, unknown>) =>
      agent.raw(
        JSON.stringify(
          composeMessage({ protocol: s.protocol }, {
            source: 'scripted-agent',
            target: 'test-requester',
            session_id: old,
            ...fields,
          } as never),
        ),
      );
    replay({ type: 'task.event', task_id: h.taskId, sequence: 2, payload: { kind: 'state', state: 'running' } });
    replay({ type: 'task.event', task_id: 'task-not-mine', sequence: 1, payload: { kind: 'state', state: 'running' } });
    replay({ type: 'task.result', task_id: h.taskId, sequence: 3, payload: { status: 'completed', output: 'replayed' } });
    expect(await h.result).toEqual({ status: 'completed', output: 'replayed' });
    expect(problems.map((p) => p.error.code)).toEqual(['PROTOCOL_VIOLATION']);
    await client.close();
  });
});

describe('integrity', () => {
  it('signs every message and verifies every reply when a key is given (spec: integrity#mac)', async () => {
    const key = new Uint8Array(32).fill(7);
    const keys = new Map([['k1', { key, peer: 'test-requester' }]]);
    const { agent, client, problems } = await setup(
      (msg, a) => {
        if (msg.type === 'task.request') {
          a.accept(msg);
          a.result(msg.task_id!, { status: 'completed', output: 'signed' });
        }
      },
      { keys: { keyId: 'k1', key } },
      { keys },
    );
    expect(client.params.integrity).toEqual({ alg: 'hmac-sha256', key_id: 'k1' });
    expect((await client.submit('demo.echo', 1).result).output).toBe('signed');
    expect(agent.received.every((m) => m.signature?.key_id === 'k1')).toBe(true);
    // An unsigned message is refused.
    const s = agent.session!;
    agent.raw(
      JSON.stringify(
        composeMessage(
          { protocol: s.protocol },
          {
            type: 'session.farewell',
            source: 'scripted-agent',
            target: 'test-requester',
            session_id: s.sessionId,
            payload: { reason: 'unsigned' },
          },
        ),
      ),
    );
    await settle();
    expect(problems.map((p) => p.error.code)).toEqual(['INVALID_SIGNATURE']);
    expect(client.isOpen).toBe(true);
    await client.close();
  });
});

describe('a transport that fails a send with something other than an Error', () => {
  /** A client whose log lines are kept, over a memory pair whose client end's sends the test replaces. */
  async function loggedClient(): Promise<{ logged: string[]; a: MemoryTransport; client: TapClient }> {
    const logged: string[] = [];
    const [a, b] = createMemoryPair();
    new ScriptedAgent(b, { script: () => {} });
    const client = await connect(a, {
      ...base,
      logger: (level, message, fields) => logged.push(`${level}: ${message} ${JSON.stringify(fields)}`),
    });
    return { logged, a, client };
  }

  it('logs what it said (a string, or that it gave no Error) and throws nothing from the handler that logs it', async () => {
    const { logged, a, client } = await loggedClient();
    const failures: unknown[] = ['the pipe is full', undefined];
    a.send = () => Promise.reject(failures.shift());
    void client.submit('tap.test.echo', 1).result.catch(() => {});
    void client.submit('tap.test.echo', 2).result.catch(() => {});
    await settle();
    expect(logged.filter((l) => l.includes('send failed'))).toEqual([
      'debug: send failed {"error":"the pipe is full"}',
      'debug: send failed {"error":"a failure without an Error (undefined)"}',
    ]);
    a.send = () => Promise.resolve();
    await client.close();
  });

  it('logs a failure once when several sends share its promise', async () => {
    const { logged, a, client } = await loggedClient();
    const shared = Promise.reject(new Error('the pipe broke'));
    a.send = () => shared;
    for (let i = 0; i < 3; i++) void client.submit('tap.test.echo', i).result.catch(() => {});
    await settle();
    expect(logged.filter((l) => l.includes('send failed'))).toEqual(['debug: send failed {"error":"the pipe broke"}']);
    a.send = () => Promise.resolve();
    await client.close();
  });
});
