import { afterEach, describe, expect, it } from 'vitest';
import { createAgent } from './agent.ts';
import type { TaskContext } from './handler.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { agentCard, testAgent, TestPeer, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const future = () => new Date(Date.now() + 60_000).toISOString();

describe('authorization', () => {
  it('refuses a guarded task without a grant, with a grant lacking the permission, and with an expired grant (spec: authorization#permission-checks)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const none = peer.request('g1', 'tap.test.guarded', {});
    expect((await peer.reply(none.message_id)).payload).toMatchObject({
      code: 'PERMISSION_DENIED',
      retryable: false,
      details: { required_permission: 'tap.test.write' },
    });
    const lacking = peer.request(
      'g2',
      'tap.test.guarded',
      {},
      { authorization: { permissions: ['x.read'], resources: [], expires_at: future() } },
    );
    expect((await peer.reply(lacking.message_id)).payload.code).toBe('PERMISSION_DENIED');
    const expired = { permissions: ['tap.test.write'], resources: [], expires_at: new Date(Date.now() - 1).toISOString() };
    const old = peer.request('g3', 'tap.test.guarded', {}, { authorization: expired });
    expect((await peer.reply(old.message_id)).payload.code).toBe('AUTHORIZATION_EXPIRED');
    // Whatever the capability requires (spec: authorization#permission-checks).
    const echo = peer.request('g4', 'tap.test.echo', 1, { authorization: expired });
    expect((await peer.reply(echo.message_id)).payload.code).toBe('AUTHORIZATION_EXPIRED');
    peer.request('g5', 'tap.test.guarded', {}, { authorization: { permissions: ['tap.test.write'], resources: [], expires_at: future() } });
    expect((await peer.result('g5')).payload).toEqual({ status: 'completed', output: { ok: true } });
  });

  it('does not start a side-effecting step after the grant expired (spec: authorization#grants)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const plan = {
      intent: 'i',
      steps: [{ action: 'a', target: 't', expected_output: 'o', reversible: true }],
      rollback: 'r',
      estimated_cost: {},
      risk_level: 'low',
    };
    peer.request(
      'p1',
      'tap.test.plan',
      { plan },
      { authorization: { permissions: [], resources: [], expires_at: new Date(Date.now() + 150).toISOString() } },
    );
    const submit = await peer.waitFor((m) => m.type === 'plan.submit');
    await new Promise((r) => setTimeout(r, 250));
    peer.send({ type: 'plan.decision', task_id: 'p1', payload: { plan_id: submit.payload.plan.plan_id, decision: 'approved' } });
    expect((await peer.result('p1')).payload).toMatchObject({ status: 'failed', error: { code: 'AUTHORIZATION_EXPIRED' } });
    expect(peer.stream('p1').some((m) => m.payload.kind === 'output')).toBe(false);
  });

  it('lets a handler check the resources of the grant (spec: authorization#grants)', async () => {
    const agent = createAgent({
      card: agentCard(),
      capabilities: {
        'x.touch': {
          capability: {
            name: 'x.touch',
            version: '1',
            description: 'touches a resource',
            input_formats: [],
            output_formats: [],
            streaming: false,
            side_effects: false,
          },
          handler: (input: { uri: string }, ctx: TaskContext) => {
            ctx.checkResource(input.uri);
            return 'touched';
          },
        },
      },
      logger: () => {},
    });
    const peer = new TestPeer(agent);
    await peer.handshake();
    const grant = { permissions: [], resources: ['repo://a'], expires_at: future() };
    peer.request('r1', 'x.touch', { uri: 'repo://a' }, { authorization: grant });
    peer.request('r2', 'x.touch', { uri: 'repo://b' }, { authorization: grant });
    expect((await peer.result('r1')).payload.status).toBe('completed');
    expect((await peer.result('r2')).payload).toMatchObject({ status: 'failed', error: { code: 'PERMISSION_DENIED' } });
  });

  it('maps credentials to principals: sessions of one principal share tasks; refused credentials get AUTH_REQUIRED (spec: authorization#principals)', async () => {
    const agent = createAgent({
      card: agentCard(),
      capabilities: withConformanceCapabilities(),
      authenticate: (credentials) => (credentials.token === 'good' ? 'user:alice' : null),
      logger: () => {},
    });
    const a = new TestPeer(agent);
    await a.handshake({ credentials: { scheme: 'bearer', token: 'good' } });
    a.request('mine', 'tap.test.echo', 1);
    await a.result('mine');
    const b = new TestPeer(agent);
    await b.handshake({ credentials: { scheme: 'bearer', token: 'good' } });
    const status = b.send({ type: 'task.status', task_id: 'mine' });
    expect((await b.reply(status.message_id)).type).toBe('task.snapshot');
    const c = new TestPeer(agent);
    const init = c.init({ credentials: { scheme: 'bearer', token: 'bad' } });
    expect((await c.reply(init.message_id)).payload).toMatchObject({ code: 'AUTH_REQUIRED', fatal: true });
  });

  it('refuses to declare capabilities under the reserved tap. prefix (spec: versioning#reserved-names)', () => {
    const handler = () => 1;
    const capability = {
      name: 'tap.mine',
      version: '1',
      description: '',
      input_formats: [],
      output_formats: [],
      streaming: false,
      side_effects: false,
    };
    expect(() => createAgent({ card: agentCard(), capabilities: { 'tap.mine': { capability, handler } }, logger: () => {} })).toThrow(
      /reserved/,
    );
  });
});
