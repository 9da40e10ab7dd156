import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_ID, REQUESTER_ID, requesterCard, testAgent, TestPeer, ManualClock, flush, expectCleanHistories } from './peer.testkit.ts';

afterEach(expectCleanHistories);

describe('handshake', () => {
  it('opens a session in four steps and runs tap.test.echo (spec: handshake#overview)', async () => {
    const peer = new TestPeer(testAgent());
    const ack = await peer.handshake({ requires: ['tap.test.echo', 'x.missing'] });
    expect(ack.payload.version).toBe('1.0');
    expect(ack.payload.granted).toEqual(['tap.test.echo']);
    expect(ack.payload.missing).toEqual(['x.missing']);
    expect(ack.payload.session_id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(ack.payload.agent.agent_id).toBe(AGENT_ID);
    expect(ack.payload.agent.durability).toBe('process');
    const req = peer.request('t1', 'tap.test.echo', { hello: ['world', 1] });
    const accepted = await peer.reply(req.message_id);
    expect(accepted).toMatchObject({ type: 'task.accepted', task_id: 't1', sequence: 1, session_id: peer.sessionId });
    expect(accepted.payload.capability).toBe('tap.test.echo');
    expect(typeof accepted.payload.deadline).toBe('string');
    const result = await peer.result('t1');
    expect(result.payload).toEqual({ status: 'completed', output: { hello: ['world', 1] } });
    expect(peer.stream('t1').map((m) => m.sequence)).toEqual([1, 2, 3]);
    expect(peer.violations(true)).toEqual([]);
  });

  it('negotiates params: smaller limits, larger clamped heartbeat, the requester timeout (spec: handshake#params)', async () => {
    const peer = new TestPeer(testAgent());
    const ack = await peer.handshake({
      params: { heartbeat_ms: 5, max_message_bytes: 4096, max_concurrent_tasks: 100, request_timeout_ms: 1234, streaming: false },
    });
    expect(ack.payload.params).toEqual({
      heartbeat_ms: 15000,
      max_message_bytes: 4096,
      max_concurrent_tasks: 8,
      request_timeout_ms: 1234,
      streaming: false,
      integrity: 'none',
    });
  });

  it('refuses a version with no common major with UNSUPPORTED_VERSION and closes (spec: handshake#version-negotiation)', async () => {
    const peer = new TestPeer(testAgent());
    const init = peer.init({ versions: ['2.0'] }, { protocol: 'tap/2.0' });
    const err = await peer.reply(init.message_id);
    expect(err.type).toBe('error');
    expect(err.payload).toMatchObject({ code: 'UNSUPPORTED_VERSION', fatal: true, details: { supported: ['1.1', '1.0'] } });
    await peer.until(() => peer.closed);
  });

  it('speaks 1.1 to a requester of 1.1 and 1.0 to one of 1.0, and resumes a session only in its own version (spec: versioning#tap-1-1, resume#resume-version)', async () => {
    const agent = testAgent();
    const newer = new TestPeer(agent);
    const ack = await newer.handshake({ versions: ['1.1', '1.0'] });
    expect(ack.payload.version).toBe('1.1');
    const pong = await newer.reply(newer.send({ type: 'ping' }).message_id);
    expect(pong.protocol).toBe('tap/1.1');
    const older = new TestPeer(agent);
    const init = older.init({
      versions: ['1.0'],
      resume: { session_id: ack.payload.session_id, resume_token: ack.payload.resume_token, tasks: [] },
    });
    const declined = await older.reply(init.message_id);
    expect(declined.protocol).toBe('tap/1.0');
    expect(declined.payload).toMatchObject({ version: '1.0', resumed: false });
    expect(declined.payload.session_id).not.toBe(ack.payload.session_id);
  });

  it('answers a repeat of a tap/1.1 init with the original ack, though the session speaks 1.0 (spec: idempotency#repeated-init)', async () => {
    const peer = new TestPeer(testAgent({ versions: ['1.0'] }));
    const init = peer.init({ versions: ['1.1', '1.0'] }, { protocol: 'tap/1.1' });
    const ack = await peer.reply(init.message_id);
    expect(ack.payload.version).toBe('1.0');
    peer.sendText(JSON.stringify(init));
    await peer.until(() => peer.received.filter((m) => m.reply_to === init.message_id).length === 2);
    const [first, second] = peer.raw.filter((t) => t.includes(`"reply_to":"${init.message_id}"`));
    expect(second).toBe(first);
    peer.sessionId = ack.payload.session_id;
    const ready = peer.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
    expect((await peer.reply(ready.message_id)).type).toBe('handshake.go');
  });

  it('refuses one message in another minor version after the ack without ending the session, another major fatally (spec: versioning#stray-minor)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const stray = peer.send({ type: 'ping', protocol: 'tap/1.3' });
    const err = await peer.reply(stray.message_id);
    expect(err.payload.code).toBe('UNSUPPORTED_VERSION');
    expect(err.payload.fatal).toBe(false);
    const ping = peer.send({ type: 'ping' });
    expect((await peer.reply(ping.message_id)).type).toBe('pong');
    const major = peer.send({ type: 'ping', protocol: 'tap/2.0' });
    expect((await peer.reply(major.message_id)).payload).toMatchObject({ code: 'UNSUPPORTED_VERSION', fatal: true });
    await peer.until(() => peer.closed);
  });

  it('sends nothing after a fatal error, not even the result of a running task (spec: errors#fatal-errors)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const req = peer.request('t1', 'tap.test.sleep', { ms: 600000 });
    await peer.reply(req.message_id);
    const major = peer.send({ type: 'ping', protocol: 'tap/2.0' });
    const err = await peer.reply(major.message_id);
    await peer.until(() => peer.closed);
    await flush();
    expect(peer.received.at(-1)).toBe(err);
  });

  it('answers requests before go with HANDSHAKE_REQUIRED and no effect, and pings with pong (spec: handshake#before-go)', async () => {
    const peer = new TestPeer(testAgent());
    const early = peer.request('t1', 'tap.test.echo', 1);
    const err = await peer.reply(early.message_id);
    expect(err.payload.code).toBe('HANDSHAKE_REQUIRED');
    const ping = peer.send({ type: 'ping' });
    expect(await peer.reply(ping.message_id)).toMatchObject({ type: 'pong', source: AGENT_ID, target: REQUESTER_ID });
    await peer.handshake();
    const status = peer.send({ type: 'task.status', task_id: 't1' });
    expect((await peer.reply(status.message_id)).payload.code).toBe('UNKNOWN_TASK');
  });

  it('answers a forged source with IDENTITY_MISMATCH and gives it no effect (spec: integrity#identity)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const forged = peer.send({ type: 'shutdown.request', source: 'someone.else', payload: { reason: 'x', grace_ms: 100 } });
    expect((await peer.reply(forged.message_id)).payload.code).toBe('IDENTITY_MISMATCH');
    const farewell = peer.send({ type: 'session.farewell', source: 'someone.else', payload: { reason: 'x' } });
    expect((await peer.reply(farewell.message_id)).payload.code).toBe('IDENTITY_MISMATCH');
    const wrongSession = peer.send({ type: 'session.farewell', session_id: 'AAAAAAAAAAAAAAAAAAAAAA', payload: { reason: 'x' } });
    expect((await peer.reply(wrongSession.message_id)).payload.code).toBe('PROTOCOL_VIOLATION');
    const req = peer.request('t1', 'tap.test.echo', 'still here');
    expect((await peer.reply(req.message_id)).type).toBe('task.accepted');
  });

  it('refuses a mismatching ready as a fatal PROTOCOL_VIOLATION (spec: handshake#ready)', async () => {
    const peer = new TestPeer(testAgent());
    const init = peer.init();
    const ack = await peer.reply(init.message_id);
    peer.sessionId = ack.payload.session_id;
    const ready = peer.send({
      type: 'handshake.ready',
      payload: { params: { ...ack.payload.params, streaming: !ack.payload.params.streaming } },
    });
    const err = await peer.reply(ready.message_id);
    expect(err.payload).toMatchObject({ code: 'PROTOCOL_VIOLATION', fatal: true });
    await peer.until(() => peer.closed);
  });

  it('answers a second init with PROTOCOL_VIOLATION and a duplicate init with the original ack, byte for byte (spec: idempotency#duplicate-messages)', async () => {
    const peer = new TestPeer(testAgent());
    const init = peer.init();
    const ack = await peer.reply(init.message_id);
    peer.sessionId = ack.payload.session_id;
    const ready = peer.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
    await peer.reply(ready.message_id);
    void peer.end.send(JSON.stringify(init));
    await peer.until(() => peer.raw.filter((t) => t.includes('"handshake.ack"')).length === 2);
    const acks = peer.raw.filter((t) => t.includes('"handshake.ack"'));
    expect(acks[1]).toBe(acks[0]);
    const second = peer.init({}, { session_id: peer.sessionId, target: AGENT_ID });
    const answer = await peer.reply(second.message_id);
    expect(answer.payload.code, answer.payload.message).toBe('PROTOCOL_VIOLATION');
  });

  it('closes a stalled handshake after the step timeout, without farewell (spec: handshake#timeouts)', async () => {
    const clock = new ManualClock();
    const peer = new TestPeer(testAgent({ clock, handshakeTimeoutMs: 10_000 }));
    await flush();
    await clock.advance(9_000);
    expect(peer.closed).toBe(false);
    await clock.advance(1_500);
    await peer.until(() => peer.closed);
    expect(peer.received).toEqual([]);
  });

  it('refuses an unknown type and a type sent the wrong way with UNKNOWN_MESSAGE_TYPE (spec: messages#direction)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    const a = peer.send({ type: 'task.frobnicate', task_id: 't1' });
    expect((await peer.reply(a.message_id)).payload.code).toBe('UNKNOWN_MESSAGE_TYPE');
    const b = peer.send({ type: 'task.accepted', task_id: 't1', sequence: 1, payload: { capability: 'tap.test.echo' } });
    expect((await peer.reply(b.message_id)).payload.code).toBe('UNKNOWN_MESSAGE_TYPE');
  });

  it('never answers an error, however broken (spec: errors#never-answered)', async () => {
    const peer = new TestPeer(testAgent());
    await peer.handshake();
    peer.send({ type: 'error', payload: { code: 'X', message: 'y', retryable: false } });
    peer.send({ type: 'error', payload: { nonsense: true } });
    peer.sendText('{"type":"error","broken":');
    expect(await peer.quiet(100)).toEqual([]);
  });

  it('keeps the requester card out of the principal unless authenticated: two sessions do not see each other (spec: authorization#isolation)', async () => {
    const agent = testAgent();
    const a = new TestPeer(agent);
    const b = new TestPeer(agent);
    await a.handshake();
    await b.handshake();
    const req = a.request('shared', 'tap.test.echo', 1);
    await a.reply(req.message_id);
    const status = b.send({ type: 'task.status', task_id: 'shared' });
    expect((await b.reply(status.message_id)).payload.code).toBe('UNKNOWN_TASK');
    const reqB = b.request('shared', 'tap.test.echo', 2);
    expect((await b.reply(reqB.message_id)).type).toBe('task.accepted');
    expect(requesterCard.agent_id).toBe(a.source);
  });
});
