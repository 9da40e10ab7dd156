import { describe, expect, it } from 'vitest';
import type { MessageOf, TapMessage } from '../../schemas/src/index.ts';
import { hmacSha256 } from '../crypto.ts';
import { composeMessage } from './compose.ts';
import { agentHandshake, initialAgentHandshake, type AgentHandshakeConfig, type AgentHandshakeState } from './handshake-agent.ts';
import { initialRequesterHandshake, requesterHandshake, type RequesterHandshakeConfig } from './handshake-requester.ts';
import { AGENT, agentConfig, KEY_ID, keyed, REQUESTER, requesterConfig, runHandshake, toAgent } from './handshake.testkit.ts';
import { sign, verify } from './signing.ts';
import { counterRandom, FIXED_NOW, SAMPLE_KEY } from './samples.testkit.ts';

const agentCfg = (extra: Partial<AgentHandshakeConfig> = {}) => agentConfig({ hmac: hmacSha256, ...extra });
const requesterCfg = (extra: Partial<RequesterHandshakeConfig> = {}) => requesterConfig({ hmac: hmacSha256, ...extra });
const signedRequester = (extra: Partial<RequesterHandshakeConfig> = {}) =>
  requesterCfg({ integrity: { keyId: KEY_ID, key: SAMPLE_KEY }, target: AGENT, ...extra });

/** The init a requester with this config sends. */
function initOf(cfg: RequesterHandshakeConfig): MessageOf<'handshake.init'> {
  return requesterHandshake(initialRequesterHandshake(cfg), { kind: 'start' }).send[0] as MessageOf<'handshake.init'>;
}

/** A message changed after signing, re-signed with the sample key when it was signed. */
function edit<M extends TapMessage>(msg: M, change: (m: M) => void): M {
  const copy = structuredClone(msg);
  change(copy);
  if (!copy.signature) return copy;
  const { signature, ...rest } = copy;
  return sign(rest, SAMPLE_KEY, signature.key_id, hmacSha256) as unknown as M;
}

/** An agent that has answered the init and waits for ready. */
function awaitingReady(agent = agentCfg(), requester = requesterCfg()) {
  const init = initOf(requester);
  const step = toAgent(initialAgentHandshake(agent), init);
  return { init, state: step.state, ack: step.send[0] as MessageOf<'handshake.ack'> };
}

function readyFor(ack: MessageOf<'handshake.ack'>, extra: Partial<MessageOf<'handshake.ready'>> = {}): MessageOf<'handshake.ready'> {
  return {
    ...composeMessage(
      { random: counterRandom(9), now: () => FIXED_NOW },
      {
        type: 'handshake.ready',
        source: REQUESTER,
        target: AGENT,
        session_id: ack.payload.session_id,
        payload: { params: ack.payload.params },
      },
    ),
    ...extra,
  };
}

const expectRefusal = (step: { send: TapMessage[]; error?: { code: string } }, code: string, replyTo?: string) => {
  expect(step.error?.code).toBe(code);
  expect(step.send).toHaveLength(1);
  expect(step.send[0]).toMatchObject({ type: 'error', payload: { code } });
  if (replyTo) expect(step.send[0]!.reply_to).toBe(replyTo);
};

describe('agent handshake', () => {
  it('answers init with an ack that fixes version, session, grants and final params (spec: handshake#ack)', () => {
    const { init, ack, state } = awaitingReady(agentCfg(), requesterCfg({ requires: ['text.summarize', 'image.draw'] }));
    expect(state.phase).toBe('awaiting-ready');
    expect(ack).toMatchObject({
      type: 'handshake.ack',
      source: AGENT,
      target: REQUESTER,
      reply_to: init.message_id,
      session_id: ack.payload.session_id,
    });
    expect(ack.payload).toMatchObject({
      version: '1.1',
      resumed: false,
      granted: ['text.summarize'],
      missing: ['image.draw'],
      params: {
        heartbeat_ms: 15000,
        max_message_bytes: 1048576,
        max_concurrent_tasks: 4,
        request_timeout_ms: 30000,
        streaming: true,
        integrity: 'none',
      },
      resume_window_ms: 300000,
      max_retained_messages: 1000,
    });
    expect(ack.payload.session_id).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(ack.payload.resume_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(ack.payload.agent.agent_id).toBe(ack.source);
  });

  it('draws a fresh session id from the injected random source for each handshake (spec: handshake#ack)', () => {
    const first = awaitingReady(agentCfg({ random: counterRandom(1) })).ack.payload.session_id;
    const second = awaitingReady(agentCfg({ random: counterRandom(2) })).ack.payload.session_id;
    expect(first).not.toBe(second);
  });

  it('chooses 1.1 for a requester that speaks 1.1 and 1.0, and 1.0 for one of 1.0 (spec: handshake#version-negotiation)', () => {
    expect(awaitingReady(agentCfg(), requesterCfg({ versions: ['1.1', '1.0'] })).ack.payload.version).toBe('1.1');
    const old = awaitingReady(agentCfg(), requesterCfg({ versions: ['1.0'] })).ack;
    expect([old.payload.version, old.protocol]).toEqual(['1.0', 'tap/1.0']);
    expect(awaitingReady(agentCfg({ supportedVersions: ['1.0'] }), requesterCfg()).ack.payload.version).toBe('1.0');
  });

  it('clamps the heartbeat into [1000, 60000] and shows the final value (spec: handshake#params)', () => {
    const ack = awaitingReady(agentCfg({ params: { heartbeat_ms: 500 } }), requesterCfg({ params: { heartbeat_ms: 90000 } })).ack;
    expect(ack.payload.params.heartbeat_ms).toBe(60000);
    const low = awaitingReady(agentCfg({ params: { heartbeat_ms: 10 } }), requesterCfg({ params: { heartbeat_ms: 0 } })).ack;
    expect(low.payload.params.heartbeat_ms).toBe(1000);
  });

  it('completes: ready with the same params gets go and establishes the session (spec: handshake#go)', () => {
    const { a, go, agentStep } = runHandshake(agentCfg(), requesterCfg());
    expect(a.phase).toBe('established');
    expect(go).toMatchObject({ type: 'handshake.go', source: AGENT, target: REQUESTER });
    expect(agentStep!.session).toMatchObject({
      role: 'agent',
      version: '1.1',
      protocol: 'tap/1.1',
      resumed: false,
      integrity: null,
      granted: ['text.summarize'],
    });
    expect(agentStep!.session!.principal).toBe(`session:${agentStep!.session!.sessionId}`);
  });

  it('refuses, without a session and not fatally, an init whose card cannot read the ack (spec: limits#message-size)', () => {
    const init = edit(initOf(requesterCfg()), (m) => {
      m.payload.agent.limits.max_message_bytes = 1024;
    });
    const agent = agentCfg({
      card: { ...agentCfg().card, description: 'd'.repeat(2000) },
    });
    const step = toAgent(initialAgentHandshake(agent), init);
    expectRefusal(step, 'MESSAGE_TOO_LARGE', init.message_id);
    expect(step.error!.details).toMatchObject({ max_message_bytes: 1024 });
    expect(step.close).toBeFalsy();
    expect(step.state.phase).toBe('awaiting-init');
  });

  it('refuses a version it does not speak with UNSUPPORTED_VERSION, details.supported, fatal (spec: handshake#version-negotiation)', () => {
    const init = initOf(requesterCfg({ versions: ['2.0'] }));
    const step = toAgent(initialAgentHandshake(agentCfg()), init);
    expectRefusal(step, 'UNSUPPORTED_VERSION', init.message_id);
    expect(step.error).toMatchObject({ fatal: true, details: { supported: ['1.1', '1.0'] } });
    expect(step.close).toBe(true);
    expect(step.state.phase).toBe('failed');
  });

  it('refuses an init whose source is not its card, with IDENTITY_MISMATCH and no session (spec: handshake#init)', () => {
    const init = edit(initOf(requesterCfg()), (m) => {
      m.source = 'someone.else';
    });
    const step = toAgent(initialAgentHandshake(agentCfg()), init);
    expectRefusal(step, 'IDENTITY_MISMATCH', init.message_id);
    expect(step.close).toBeFalsy();
    expect(step.state.phase).toBe('awaiting-init');
    expect(toAgent(step.state, initOf(requesterCfg())).state.phase).toBe('awaiting-ready');
  });

  it('refuses an init addressed to another agent, and accepts "*" or its own id (spec: envelope#source-and-target)', () => {
    expectRefusal(toAgent(initialAgentHandshake(agentCfg()), initOf(requesterCfg({ target: 'other.agent' }))), 'IDENTITY_MISMATCH');
    expect(toAgent(initialAgentHandshake(agentCfg()), initOf(requesterCfg({ target: AGENT }))).state.phase).toBe('awaiting-ready');
  });

  describe('integrity', () => {
    it('accepts a signed init with a held key, signs ack and go, and names the principal (spec: integrity#negotiation)', () => {
      const { a, ack, go, agentStep } = runHandshake(agentCfg({ keys: keyed() }), signedRequester());
      expect(a.phase).toBe('established');
      expect(ack!.payload.params.integrity).toEqual({ alg: 'hmac-sha256', key_id: KEY_ID });
      expect(verify(ack!, SAMPLE_KEY, hmacSha256, KEY_ID)).toBe(true);
      expect(verify(go!, SAMPLE_KEY, hmacSha256, KEY_ID)).toBe(true);
      expect(agentStep!.session).toMatchObject({ principal: `agent:${REQUESTER}`, integrity: { keyId: KEY_ID } });
    });

    it.each([
      ['the key is unknown', new Map()],
      ['the key is bound to another agent id', keyed('other.agent')],
    ])('refuses with AUTH_REQUIRED, unsigned and fatal, when %s (spec: integrity#keys)', (_name, keys) => {
      const init = initOf(signedRequester());
      const step = toAgent(initialAgentHandshake(agentCfg({ keys })), init);
      expectRefusal(step, 'AUTH_REQUIRED', init.message_id);
      expect(step.send[0]!.signature).toBeUndefined();
      expect(step.error!.fatal).toBe(true);
      expect(step.close).toBe(true);
    });

    it('refuses integrity "none" from a peer it holds a key for: no silent downgrade (spec: integrity#negotiation)', () => {
      const step = toAgent(initialAgentHandshake(agentCfg({ keys: keyed() })), initOf(requesterCfg()));
      expectRefusal(step, 'AUTH_REQUIRED');
      expect(step.close).toBe(true);
    });

    it('refuses a signed init with a wrong signature: INVALID_SIGNATURE, unsigned and fatal (spec: integrity#unsigned-errors)', () => {
      const init = initOf(signedRequester());
      const forged = { ...init, signature: { ...init.signature!, value: 'A'.repeat(43) } };
      const step = toAgent(initialAgentHandshake(agentCfg({ keys: keyed() })), forged);
      expectRefusal(step, 'INVALID_SIGNATURE');
      expect(step.send[0]!.signature).toBeUndefined();
      expect(step.close).toBe(true);
    });

    it('refuses a signed init outside the skew window with REPLAY_DETECTED (spec: integrity#skew)', () => {
      const init = initOf(signedRequester({ now: () => FIXED_NOW - 301_000 }));
      expectRefusal(toAgent(initialAgentHandshake(agentCfg({ keys: keyed() })), init), 'REPLAY_DETECTED');
      const fresh = initOf(signedRequester({ now: () => FIXED_NOW - 299_000 }));
      expect(toAgent(initialAgentHandshake(agentCfg({ keys: keyed() })), fresh).state.phase).toBe('awaiting-ready');
    });

    it('makes a source mismatch fatal when the init proposed integrity (spec: integrity#unsigned-errors)', () => {
      const init = edit(initOf(signedRequester()), (m) => {
        m.source = 'someone.else';
      });
      const step = toAgent(initialAgentHandshake(agentCfg({ keys: keyed() })), init);
      expectRefusal(step, 'IDENTITY_MISMATCH');
      expect(step.close).toBe(true);
    });

    it('refuses an unsigned ready under integrity with INVALID_SIGNATURE and no effect (spec: integrity#verification)', () => {
      const { state, ack } = awaitingReady(agentCfg({ keys: keyed() }), signedRequester());
      const step = toAgent(state, readyFor(ack));
      expectRefusal(step, 'INVALID_SIGNATURE');
      expect(verify(step.send[0]!, SAMPLE_KEY, hmacSha256)).toBe(true);
      expect(step.state).toBe(state);
    });

    it('gives a forged error no effect and no answer (spec: errors#no-replies-to-errors)', () => {
      const { state, ack } = awaitingReady(agentCfg({ keys: keyed() }), signedRequester());
      const forged = composeMessage(
        { random: counterRandom(3), now: () => FIXED_NOW },
        {
          type: 'error',
          source: REQUESTER,
          target: AGENT,
          session_id: ack.payload.session_id,
          payload: { code: 'INTERNAL_ERROR', message: 'x', retryable: true, fatal: true },
        },
      );
      expect(toAgent(state, forged)).toEqual({ state, send: [], handled: true });
    });

    it('answers a ready naming another session with INVALID_SIGNATURE under integrity (spec: integrity#session-binding)', () => {
      const { state, ack } = awaitingReady(agentCfg({ keys: keyed() }), signedRequester());
      const ready = sign(readyFor(ack, { session_id: 'AAAAAAAAAAAAAAAAAAAAAA' }), SAMPLE_KEY, KEY_ID, hmacSha256);
      expectRefusal(toAgent(state, ready), 'INVALID_SIGNATURE');
    });
  });

  describe('credentials', () => {
    const verifyCredentials = (c: { token?: string }) => (c.token === 'good' ? 'principal.alice' : null);

    it('takes the principal the credentials prove (spec: authorization#principals)', () => {
      const { agentStep } = runHandshake(
        agentCfg({ requireCredentials: true, verifyCredentials }),
        requesterCfg({ credentials: { scheme: 'bearer', token: 'good' } }),
      );
      expect(agentStep!.session!.principal).toBe('principal.alice');
    });

    it.each([
      ['missing', undefined],
      ['refused', { scheme: 'bearer', token: 'bad' }],
    ])('refuses %s credentials with AUTH_REQUIRED and closes (spec: handshake#credentials)', (_name, credentials) => {
      const step = toAgent(
        initialAgentHandshake(agentCfg({ requireCredentials: true, verifyCredentials })),
        initOf(requesterCfg({ credentials })),
      );
      expectRefusal(step, 'AUTH_REQUIRED');
      expect(step.close).toBe(true);
    });

    it('needs a verifier when it requires credentials', () => {
      expect(() => initialAgentHandshake(agentCfg({ requireCredentials: true }))).toThrow(/verifyCredentials/);
    });
  });

  describe('resume', () => {
    const resume = {
      session_id: 'OldSessionOldSession01',
      resume_token: 'tok-0123456789abcdef',
      tasks: [{ task_id: 't-1', last_sequence: 3 }],
    };

    it('grants a resume with the same session id and token, after asking with the principal (spec: resume#reconnect)', () => {
      const asked: unknown[] = [];
      const { ack, agentStep } = runHandshake(agentCfg({ resume: (r) => (asked.push(r), true) }), requesterCfg({ resume }));
      expect(asked).toEqual([{ ...resume, principal: `session:${resume.session_id}`, peer: REQUESTER, version: '1.1' }]);
      expect(ack!.payload).toMatchObject({ session_id: resume.session_id, resume_token: resume.resume_token, resumed: true });
      expect(agentStep!.session).toMatchObject({ resumed: true, resumeTasks: resume.tasks, principal: `session:${resume.session_id}` });
    });

    it('declines with a new session id and resumed: false (spec: resume#declined-resume)', () => {
      const { ack } = runHandshake(agentCfg({ resume: () => false }), requesterCfg({ resume }));
      expect(ack!.payload.resumed).toBe(false);
      expect(ack!.payload.session_id).not.toBe(resume.session_id);
      expect(ack!.payload.resume_token).not.toBe(resume.resume_token);
    });
  });

  describe('ready', () => {
    it('refuses a ready whose params differ from the ack with a fatal PROTOCOL_VIOLATION (spec: handshake#ready)', () => {
      const { state, ack } = awaitingReady();
      const step = toAgent(state, readyFor(ack, { payload: { params: { ...ack.payload.params, heartbeat_ms: 20000 } } }));
      expectRefusal(step, 'PROTOCOL_VIOLATION');
      expect(step.error!.fatal).toBe(true);
      expect(step.close).toBe(true);
      expect(step.state.phase).toBe('failed');
    });

    it('accepts a ready whose params list the same members in another order', () => {
      const { state, ack } = awaitingReady();
      const reordered = Object.fromEntries(Object.entries(ack.payload.params).reverse()) as typeof ack.payload.params;
      expect(toAgent(state, readyFor(ack, { payload: { params: reordered } })).session).toBeDefined();
    });

    it('accepts a ready whose params hold members the ack lacks (spec: handshake#ready)', () => {
      const { state, ack } = awaitingReady();
      const extra = { ...ack.payload.params, 'x-acme-note': 1, later_minor_param: true } as typeof ack.payload.params;
      expect(toAgent(state, readyFor(ack, { payload: { params: extra } })).session).toBeDefined();
    });

    it('answers a ready naming another session with PROTOCOL_VIOLATION and no effect (spec: integrity#session-binding)', () => {
      const { state, ack } = awaitingReady();
      const step = toAgent(state, readyFor(ack, { session_id: 'AAAAAAAAAAAAAAAAAAAAAA' }));
      expectRefusal(step, 'PROTOCOL_VIOLATION');
      expect(step.close).toBeFalsy();
      expect(step.state).toBe(state);
    });

    it('answers a ready from someone else with IDENTITY_MISMATCH and no effect (spec: integrity#identity)', () => {
      const { state, ack } = awaitingReady();
      const step = toAgent(state, readyFor(ack, { source: 'intruder' }));
      expectRefusal(step, 'IDENTITY_MISMATCH');
      expect(step.state).toBe(state);
      expect(step.send[0]).toMatchObject({ target: 'intruder', session_id: ack.payload.session_id });
    });
  });

  describe('before go', () => {
    const request = (state: AgentHandshakeState, sessionId?: string) =>
      toAgent(
        state,
        composeMessage(
          { random: counterRandom(5), now: () => FIXED_NOW },
          {
            type: 'task.request',
            source: REQUESTER,
            target: AGENT,
            session_id: sessionId ?? 'AAAAAAAAAAAAAAAAAAAAAA',
            task_id: 't-1',
            payload: { capability: 'text.summarize', input: 'x' },
          },
        ),
      );

    it('answers a task message with HANDSHAKE_REQUIRED, reply_to and task_id, and keeps waiting (spec: handshake#before-go)', () => {
      const initial = initialAgentHandshake(agentCfg());
      const step = request(initial);
      expectRefusal(step, 'HANDSHAKE_REQUIRED');
      expect(step.send[0]).toMatchObject({ task_id: 't-1' });
      expect(step.close).toBeFalsy();
      expect(step.state).toBe(initial);
      const { state, ack } = awaitingReady();
      expectRefusal(request(state, ack.payload.session_id), 'HANDSHAKE_REQUIRED');
    });

    it('answers ping with pong before and during the handshake (spec: handshake#before-go)', () => {
      const ping = composeMessage(
        { random: counterRandom(6), now: () => FIXED_NOW },
        { type: 'ping', source: REQUESTER, target: AGENT, payload: {} },
      );
      const step = toAgent(initialAgentHandshake(agentCfg()), ping);
      expect(step.send).toEqual([expect.objectContaining({ type: 'pong', reply_to: ping.message_id })]);
      expect(step.error).toBeUndefined();
    });

    it('takes a pong before go as a sign of life only, answering nothing (spec: handshake#before-go)', () => {
      const pong = composeMessage(
        { random: counterRandom(6), now: () => FIXED_NOW },
        { type: 'pong', source: REQUESTER, target: AGENT, reply_to: 'x', payload: {} },
      );
      const initial = initialAgentHandshake(agentCfg());
      expect(toAgent(initial, pong)).toEqual({ state: initial, send: [], handled: true });
    });

    it('answers a ready before any ack with PROTOCOL_VIOLATION, not fatal (spec: handshake#before-go)', () => {
      const { ack } = awaitingReady();
      const step = toAgent(initialAgentHandshake(agentCfg()), readyFor(ack));
      expectRefusal(step, 'PROTOCOL_VIOLATION');
      expect(step.close).toBeFalsy();
    });

    it('answers a type sent in the wrong direction with UNKNOWN_MESSAGE_TYPE (spec: messages#direction)', () => {
      const { ack } = awaitingReady();
      expectRefusal(toAgent(initialAgentHandshake(agentCfg()), { ...ack, source: REQUESTER, target: AGENT }), 'UNKNOWN_MESSAGE_TYPE');
    });

    it('never answers an error; a fatal one ends the attempt (spec: errors#no-replies-to-errors)', () => {
      const error = (fatal: boolean) =>
        composeMessage(
          { random: counterRandom(7), now: () => FIXED_NOW },
          {
            type: 'error',
            source: REQUESTER,
            target: AGENT,
            payload: { code: 'INTERNAL_ERROR', message: 'x', retryable: true, fatal },
          },
        );
      const initial = initialAgentHandshake(agentCfg());
      expect(toAgent(initial, error(false))).toMatchObject({ state: initial, send: [] });
      expect(toAgent(initial, error(true))).toMatchObject({ state: { phase: 'failed' }, send: [], close: true });
    });

    it('closes without farewell when a step times out (spec: handshake#timeouts)', () => {
      for (const state of [initialAgentHandshake(agentCfg()), awaitingReady().state]) {
        const step = agentHandshake(state, { kind: 'timeout' });
        expect(step).toMatchObject({ send: [], close: true, state: { phase: 'failed' } });
      }
      const { a } = runHandshake(agentCfg(), requesterCfg());
      expect(agentHandshake(a, { kind: 'timeout' })).toMatchObject({ state: a, send: [] });
    });
  });

  describe('after the ack', () => {
    it('re-sends the original ack, byte for byte, for a duplicate init (spec: idempotency#duplicate-messages)', () => {
      const { state, init, ack } = awaitingReady();
      const step = toAgent(state, init);
      expect(step.send).toEqual([ack]);
      expect(JSON.stringify(step.send[0])).toBe(JSON.stringify(ack));
      expect(step.state).toBe(state);
    });

    it('re-sends the original go for a duplicate ready, and refuses a new init on the established session (spec: handshake#before-go)', () => {
      const { a, ready, go } = runHandshake(agentCfg(), requesterCfg());
      expect(toAgent(a, ready!).send).toEqual([go]);
      const second = initOf(requesterCfg({ random: counterRandom(77) }));
      const step = toAgent(a, second);
      expectRefusal(step, 'PROTOCOL_VIOLATION');
      expect(step.state).toBe(a);
      expect(step.close).toBeFalsy();
    });

    it('leaves every other message to the runtime once established', () => {
      const { a } = runHandshake(agentCfg(), requesterCfg());
      const ping = composeMessage(
        { random: counterRandom(8), now: () => FIXED_NOW },
        { type: 'ping', source: REQUESTER, target: AGENT, payload: {} },
      );
      expect(toAgent(a, ping)).toEqual({ state: a, send: [], handled: false });
    });

    it('starts again from a clean state after a failed handshake (spec: handshake#failures)', () => {
      const failed = toAgent(initialAgentHandshake(agentCfg()), initOf(requesterCfg({ versions: ['2.0'] }))).state;
      expect(failed.phase).toBe('failed');
      expect(agentHandshake(failed, { kind: 'message', message: initOf(requesterCfg()) })).toMatchObject({ state: failed, send: [] });
      expect(runHandshake(agentCfg(), requesterCfg()).a.phase).toBe('established');
    });
  });
});
