import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MessageOf, TapMessage } from '../../schemas/src/index.ts';
import { hmacSha256 } from '../crypto.ts';
import { composeMessage } from './compose.ts';
import { agentHandshake, initialAgentHandshake, type AgentHandshakeConfig, type AgentHandshakeState } from './handshake-agent.ts';
import {
  initialRequesterHandshake,
  requesterHandshake,
  type RequesterHandshakeConfig,
  type RequesterHandshakeState,
} from './handshake-requester.ts';
import {
  AGENT,
  agentConfig,
  KEY_ID,
  keyed,
  REQUESTER,
  requesterConfig,
  runHandshake,
  toAgent,
  toRequester,
  wire,
} from './handshake.testkit.ts';
import { sign, verify } from './signing.ts';
import { counterRandom, FIXED_NOW, SAMPLE_KEY } from './samples.testkit.ts';
import { validateMessage } from './validate.ts';

const agentCfg = (extra: Partial<AgentHandshakeConfig> = {}) => agentConfig({ hmac: hmacSha256, ...extra });
const requesterCfg = (extra: Partial<RequesterHandshakeConfig> = {}) => requesterConfig({ hmac: hmacSha256, ...extra });
const integrity = { keyId: KEY_ID, key: SAMPLE_KEY };

/** A requester that sent its init, and the ack an agent answers it with. */
function awaitingAck(requester = requesterCfg(), agent = agentCfg()) {
  const started = requesterHandshake(initialRequesterHandshake(requester), { kind: 'start' });
  const init = started.send[0] as MessageOf<'handshake.init'>;
  const ack = toAgent(initialAgentHandshake(agent), init).send[0] as MessageOf<'handshake.ack'>;
  return { state: started.state, init, ack };
}

/** An ack edited after the fact, re-signed when it was signed. */
function editAck(ack: MessageOf<'handshake.ack'>, change: (m: MessageOf<'handshake.ack'>) => void): MessageOf<'handshake.ack'> {
  const copy = structuredClone(ack);
  change(copy);
  if (!copy.signature) return copy;
  const { signature: _s, ...rest } = copy;
  return sign(rest, SAMPLE_KEY, KEY_ID, hmacSha256) as MessageOf<'handshake.ack'>;
}

const expectAbort = (
  step: { send: TapMessage[]; error?: { code: string; fatal?: boolean }; close?: boolean; state: { phase: string } },
  code: string,
) => {
  expect(step.error?.code).toBe(code);
  expect(step.send[0]).toMatchObject({ type: 'error', payload: { code, fatal: true } });
  expect(step.close).toBe(true);
  expect(step.state.phase).toBe('failed');
};

describe('requester handshake', () => {
  it('starts with an init listing every version, its card, requires and params, addressed to "*" (spec: handshake#init)', () => {
    const step = requesterHandshake(initialRequesterHandshake(requesterCfg({ versions: ['1.1', '1.0'] })), { kind: 'start' });
    const init = step.send[0] as MessageOf<'handshake.init'>;
    expect(init).toMatchObject({
      type: 'handshake.init',
      source: REQUESTER,
      target: '*',
      payload: { versions: ['1.1', '1.0'], requires: ['text.summarize'], params: { max_concurrent_tasks: 8 } },
    });
    expect(init.session_id).toBeUndefined();
    expect(validateMessage(wire(init))).toBeNull();
    expect(requesterHandshake(step.state, { kind: 'start' }).send).toEqual([]);
  });

  it('proposes integrity and signs the init when it holds a key (spec: integrity#negotiation)', () => {
    const init = requesterHandshake(initialRequesterHandshake(requesterCfg({ integrity })), { kind: 'start' }).send[0]!;
    expect((init as MessageOf<'handshake.init'>).payload.params.integrity).toEqual({ alg: 'hmac-sha256', key_id: KEY_ID });
    expect(verify(init, SAMPLE_KEY, hmacSha256, KEY_ID)).toBe(true);
  });

  it.each([
    ['without integrity', {}, {}],
    ['with integrity', { keys: keyed() }, { integrity }],
  ])('establishes the same session on both sides %s (spec: handshake#overview)', (_name, agentExtra, requesterExtra) => {
    const { a, r, ready, requesterStep, agentStep } = runHandshake(agentCfg(agentExtra), requesterCfg(requesterExtra));
    expect(a.phase).toBe('established');
    expect(r.phase).toBe('established');
    expect(ready).toMatchObject({ type: 'handshake.ready', target: AGENT, session_id: agentStep!.session!.sessionId });
    expect(ready!.reply_to).toBeUndefined();
    const mine = requesterStep!.session!;
    expect(mine).toMatchObject({
      role: 'requester',
      sessionId: agentStep!.session!.sessionId,
      resumeToken: agentStep!.session!.resumeToken,
      params: agentStep!.session!.params,
    });
    expect(mine.peer.agent_id).toBe(AGENT);
  });

  describe('checks the ack', () => {
    it('refuses an ack from an agent other than the one it addressed with IDENTITY_MISMATCH (spec: integrity#identity)', () => {
      const { state, ack } = awaitingAck(requesterCfg({ target: AGENT }));
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.source = 'other.agent';
            m.payload.agent.agent_id = 'other.agent';
          }),
        ),
        'IDENTITY_MISMATCH',
      );
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.payload.agent.agent_id = 'other.agent';
          }),
        ),
        'IDENTITY_MISMATCH',
      );
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.target = 'someone.else';
          }),
        ),
        'IDENTITY_MISMATCH',
      );
    });

    it('refuses an ack answering another message, or naming two sessions', () => {
      const { state, ack } = awaitingAck();
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.reply_to = 'other';
          }),
        ),
        'PROTOCOL_VIOLATION',
      );
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.session_id = 'BBBBBBBBBBBBBBBBBBBBBB';
          }),
        ),
        'PROTOCOL_VIOLATION',
      );
    });

    it('refuses a version it did not offer with UNSUPPORTED_VERSION (spec: handshake#version-negotiation)', () => {
      const { state, ack } = awaitingAck();
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.payload.version = '1.7';
          }),
        ),
        'UNSUPPORTED_VERSION',
      );
    });

    it.each<[string, (p: MessageOf<'handshake.ack'>['payload']['params']) => void]>([
      [
        'a raised max_message_bytes',
        (p) => {
          p.max_message_bytes = 4 * 1048576;
        },
      ],
      [
        'a raised max_concurrent_tasks',
        (p) => {
          p.max_concurrent_tasks = 99;
        },
      ],
      [
        'a changed request_timeout_ms',
        (p) => {
          p.request_timeout_ms = 1;
        },
      ],
      [
        'a heartbeat out of range',
        (p) => {
          p.heartbeat_ms = 100;
        },
      ],
    ])('refuses final params with %s as PROTOCOL_VIOLATION (spec: handshake#params)', (_name, change) => {
      const { state, ack } = awaitingAck(
        requesterCfg({ params: { max_message_bytes: 1048576, max_concurrent_tasks: 8, request_timeout_ms: 5000 } }),
      );
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => change(m.payload.params)),
        ),
        'PROTOCOL_VIOLATION',
      );
    });

    it('refuses an ack that drops the proposed integrity: never downgraded (spec: integrity#negotiation)', () => {
      const { state, ack } = awaitingAck(requesterCfg({ integrity }), agentCfg({ keys: keyed() }));
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.payload.params.integrity = 'none';
          }),
        ),
        'PROTOCOL_VIOLATION',
      );
    });

    it('refuses an unsigned or forged ack under integrity with INVALID_SIGNATURE, and waits for the real one (spec: integrity#verification)', () => {
      const { state, ack } = awaitingAck(requesterCfg({ integrity }), agentCfg({ keys: keyed() }));
      const { signature, ...unsigned } = ack;
      for (const bad of [unsigned as MessageOf<'handshake.ack'>, { ...ack, signature: { ...signature!, value: 'A'.repeat(43) } }]) {
        const step = toRequester(state, bad);
        expect(step).toMatchObject({ state, error: { code: 'INVALID_SIGNATURE' } });
        expect(step.close).toBeFalsy();
        expect(verify(step.send[0]!, SAMPLE_KEY, hmacSha256)).toBe(true);
      }
      expect(toRequester(state, ack).state.phase).toBe('awaiting-go');
    });

    it('ignores a forged error during the handshake, without answering it (spec: errors#no-replies-to-errors)', () => {
      const { state, ack } = awaitingAck(requesterCfg({ integrity }), agentCfg({ keys: keyed() }));
      const goWait = toRequester(state, ack).state;
      const forged = composeMessage(
        { random: counterRandom(3), now: () => FIXED_NOW },
        {
          type: 'error',
          source: AGENT,
          target: REQUESTER,
          session_id: ack.payload.session_id,
          payload: { code: 'INTERNAL_ERROR', message: 'x', retryable: true, fatal: true },
        },
      );
      expect(toRequester(goWait, forged)).toEqual({ state: goWait, send: [], handled: true });
    });

    it('refuses a resume it did not ask for (spec: resume#reconnect)', () => {
      const { state, ack } = awaitingAck();
      expectAbort(
        toRequester(
          state,
          editAck(ack, (m) => {
            m.payload.resumed = true;
          }),
        ),
        'PROTOCOL_VIOLATION',
      );
    });
  });

  describe('agent refusals', () => {
    it('ends the attempt on an error answering its init, closing when it is fatal (spec: handshake#failures)', () => {
      const started = requesterHandshake(initialRequesterHandshake(requesterCfg({ versions: ['2.0'] })), { kind: 'start' });
      const refusal = toAgent(initialAgentHandshake(agentCfg()), started.send[0]!).send[0]!;
      const step = toRequester(started.state, refusal);
      expect(step).toMatchObject({ send: [], close: true, error: { code: 'UNSUPPORTED_VERSION' }, state: { phase: 'failed' } });
      const nonFatal = toRequester(started.state, {
        ...refusal,
        payload: { code: 'IDENTITY_MISMATCH', message: 'x', retryable: false },
      } as TapMessage);
      expect(nonFatal).toMatchObject({ close: false, state: { phase: 'failed' } });
    });

    it('accepts the unsigned refusal of its signed init (spec: integrity#unsigned-errors)', () => {
      const started = requesterHandshake(initialRequesterHandshake(requesterCfg({ integrity })), { kind: 'start' });
      const refusal = toAgent(initialAgentHandshake(agentCfg()), started.send[0]!).send[0]!;
      expect(refusal.signature).toBeUndefined();
      expect(toRequester(started.state, refusal)).toMatchObject({ error: { code: 'AUTH_REQUIRED' }, close: true });
    });

    it('accepts unsigned pings and pongs before the ack: the key is not agreed yet (spec: integrity#unsigned-errors)', () => {
      const { state } = awaitingAck(requesterCfg({ integrity }), agentCfg({ keys: keyed() }));
      const ctx = { random: counterRandom(3), now: () => FIXED_NOW };
      const pong = composeMessage(ctx, { type: 'pong', source: AGENT, target: REQUESTER, reply_to: 'x', payload: {} });
      expect(toRequester(state, pong)).toMatchObject({ state, send: [] });
      const ping = composeMessage(ctx, { type: 'ping', source: AGENT, target: REQUESTER, payload: {} });
      expect(toRequester(state, ping).send[0]).toMatchObject({ type: 'pong', reply_to: ping.message_id });
    });

    it('ignores a non-fatal error about something else, and never answers an error (spec: errors#no-replies-to-errors)', () => {
      const { state } = awaitingAck();
      const stray = composeMessage(
        { random: counterRandom(3), now: () => FIXED_NOW },
        {
          type: 'error',
          source: AGENT,
          target: REQUESTER,
          reply_to: 'm-other',
          payload: { code: 'BUSY', message: 'x', retryable: true },
        },
      );
      expect(toRequester(state, stray)).toMatchObject({ state, send: [] });
    });
  });

  describe('checks the go', () => {
    function awaitingGo() {
      const { state, ack } = awaitingAck();
      const step = toRequester(state, ack);
      const ready = step.send[0] as MessageOf<'handshake.ready'>;
      const go = toAgent(
        toAgent(initialAgentHandshake(agentCfg()), (state as Extract<RequesterHandshakeState, { phase: 'awaiting-ack' }>).init).state,
        ready,
      ).send[0] as MessageOf<'handshake.go'>;
      return { state: step.state, ready, go };
    }

    it('establishes on the go that answers its ready (spec: handshake#go)', () => {
      const { state, go } = awaitingGo();
      expect(toRequester(state, go).state.phase).toBe('established');
    });

    it('refuses a go answering another message, and one naming another session', () => {
      const { state, go } = awaitingGo();
      expectAbort(toRequester(state, { ...go, reply_to: 'x' }), 'PROTOCOL_VIOLATION');
      const other = toRequester(state, { ...go, session_id: 'CCCCCCCCCCCCCCCCCCCCCC' });
      expect(other.error?.code).toBe('PROTOCOL_VIOLATION');
      expect(other.state).toBe(state);
    });

    it('answers a go from someone else with IDENTITY_MISMATCH and keeps waiting (spec: integrity#identity)', () => {
      const { state, go } = awaitingGo();
      const step = toRequester(state, { ...go, source: 'intruder' });
      expect(step.error?.code).toBe('IDENTITY_MISMATCH');
      expect(step.state).toBe(state);
    });

    it('answers pings, refuses early task messages with HANDSHAKE_REQUIRED, and requester-bound types only (spec: handshake#before-go)', () => {
      const { state, ready } = awaitingGo();
      const ctx = { random: counterRandom(4), now: () => FIXED_NOW };
      const base = { source: AGENT, target: REQUESTER, session_id: ready.session_id };
      const ping = composeMessage(ctx, { ...base, type: 'ping', payload: {} });
      expect(toRequester(state, ping).send[0]).toMatchObject({ type: 'pong', reply_to: ping.message_id, session_id: ready.session_id });
      const event = composeMessage(ctx, {
        ...base,
        type: 'task.event',
        task_id: 't-1',
        sequence: 2,
        payload: { kind: 'progress', percent: 5 },
      });
      expect(toRequester(state, event).error?.code).toBe('HANDSHAKE_REQUIRED');
      const request = composeMessage(ctx, { ...base, type: 'task.request', task_id: 't-1', payload: { capability: 'a.b', input: 1 } });
      expect(toRequester(state, request).error?.code).toBe('UNKNOWN_MESSAGE_TYPE');
    });

    it('gives up when a step times out (spec: handshake#timeouts)', () => {
      const { state } = awaitingGo();
      expect(requesterHandshake(state, { kind: 'timeout' })).toMatchObject({ send: [], close: true, state: { phase: 'failed' } });
    });
  });

  it('leaves every message to the runtime once established', () => {
    const { r } = runHandshake(agentCfg(), requesterCfg());
    expect(requesterHandshake(r, { kind: 'timeout' })).toMatchObject({ state: r, send: [] });
    expect(requesterHandshake(r, { kind: 'message', message: { type: 'ping' } as TapMessage }).handled).toBe(false);
  });
});

describe('both machines under a faulty network (fast-check)', () => {
  type Fault = 'deliver' | 'duplicate' | 'drop' | 'ping' | 'garble-source' | 'timeout-agent' | 'timeout-requester';
  const faults = fc.array(
    fc.constantFrom<Fault>(
      'deliver',
      'deliver',
      'deliver',
      'duplicate',
      'drop',
      'ping',
      'garble-source',
      'timeout-agent',
      'timeout-requester',
    ),
    { maxLength: 12 },
  );

  it('never throws, sends only schema-valid messages, and agrees on the session when both establish', () => {
    fc.assert(
      fc.property(faults, fc.boolean(), (plan, signed) => {
        let a: AgentHandshakeState = initialAgentHandshake(agentCfg(signed ? { keys: keyed() } : {}));
        let r: RequesterHandshakeState = initialRequesterHandshake(requesterCfg(signed ? { integrity } : {}));
        const queue: TapMessage[] = [];
        const sent: TapMessage[] = [];
        const out = (msgs: TapMessage[]) => {
          sent.push(...msgs);
          queue.push(...msgs);
        };
        const step = (m: TapMessage) => {
          if (m.source === REQUESTER || m.target === AGENT) {
            const s = agentHandshake(a, { kind: 'message', message: wire(m) });
            a = s.state;
            out(s.send);
          } else {
            const s = requesterHandshake(r, { kind: 'message', message: wire(m) });
            r = s.state;
            out(s.send);
          }
        };
        const s0 = requesterHandshake(r, { kind: 'start' });
        r = s0.state;
        out(s0.send);
        let guard = 0;
        for (const fault of [...plan, ...Array<Fault>(8).fill('deliver')]) {
          if (++guard > 40) break;
          if (fault === 'timeout-agent') {
            a = agentHandshake(a, { kind: 'timeout' }).state;
            continue;
          }
          if (fault === 'timeout-requester') {
            r = requesterHandshake(r, { kind: 'timeout' }).state;
            continue;
          }
          if (fault === 'ping') {
            queue.push(
              composeMessage(
                { random: counterRandom(guard), now: () => FIXED_NOW },
                { type: 'ping', source: REQUESTER, target: AGENT, payload: {} },
              ),
            );
            continue;
          }
          const m = queue.shift();
          if (!m) continue;
          if (fault === 'drop') continue;
          if (fault === 'garble-source') {
            step({ ...m, source: 'intruder' });
            continue;
          }
          step(m);
          if (fault === 'duplicate') step(m);
        }
        for (const m of sent) expect(validateMessage(m)).toBeNull();
        if (signed) for (const m of sent) if (m.type.startsWith('handshake.')) expect(verify(m, SAMPLE_KEY, hmacSha256)).toBe(true);
        if (a.phase === 'established' && r.phase === 'established') {
          expect(r.session.sessionId).toBe(a.session.sessionId);
          expect(r.session.params).toEqual(a.session.params);
        }
        if (r.phase === 'established') expect(a.phase).toBe('established');
      }),
      { numRuns: 300 },
    );
  });
});
