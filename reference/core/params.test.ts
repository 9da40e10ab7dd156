import { describe, expect, it } from 'vitest';
import {
  agentDefaults,
  checkFinalParams,
  clampHeartbeat,
  confirmsParams,
  DEFAULT_PARAMS,
  negotiateParams,
  sameParams,
  type AgentParamDefaults,
  type ProposedParams,
} from './params.ts';
import { sampleCard } from './samples.testkit.ts';
import { validateAgainst } from './validate.ts';

const agent: AgentParamDefaults = {
  heartbeat_ms: 15000,
  max_message_bytes: 65536,
  max_concurrent_tasks: 4,
  request_timeout_ms: 30000,
  streaming: true,
};

describe('session params', () => {
  it.each<[string, ProposedParams, Partial<Record<string, unknown>>]>([
    ['takes the smaller max_message_bytes', { max_message_bytes: 1048576 }, { max_message_bytes: 65536 }],
    ['keeps a smaller proposed max_message_bytes', { max_message_bytes: 2048 }, { max_message_bytes: 2048 }],
    ['takes the smaller max_concurrent_tasks', { max_concurrent_tasks: 8 }, { max_concurrent_tasks: 4 }],
    ['keeps a smaller proposed max_concurrent_tasks', { max_concurrent_tasks: 2 }, { max_concurrent_tasks: 2 }],
    ['takes the larger heartbeat_ms', { heartbeat_ms: 20000 }, { heartbeat_ms: 20000 }],
    ['keeps the agent heartbeat when the proposal is smaller', { heartbeat_ms: 5000 }, { heartbeat_ms: 15000 }],
    ['clamps a heartbeat above 60000', { heartbeat_ms: 120000 }, { heartbeat_ms: 60000 }],
    ['takes the requester request_timeout_ms', { request_timeout_ms: 1234 }, { request_timeout_ms: 1234 }],
    ['takes the agent request_timeout_ms when none is proposed', {}, { request_timeout_ms: 30000 }],
    ['turns streaming off when proposed false', { streaming: false }, { streaming: false }],
    ['keeps integrity "none" when none is proposed', {}, { integrity: 'none' }],
    [
      'keeps a proposed integrity unchanged',
      { integrity: { alg: 'hmac-sha256', key_id: 'k1' } },
      { integrity: { alg: 'hmac-sha256', key_id: 'k1' } },
    ],
  ])('%s (spec: handshake#params)', (_name, proposed, expected) => {
    const final = negotiateParams(proposed, agent);
    expect(final).toMatchObject(expected);
    expect(validateAgainst('session-params.schema.json', final)).toBeNull();
    expect(checkFinalParams(proposed, final)).toEqual([]);
  });

  it('clamps heartbeats into [1000, 60000] (spec: limits#heartbeats)', () => {
    expect(clampHeartbeat(0)).toBe(1000);
    expect(clampHeartbeat(999)).toBe(1000);
    expect(clampHeartbeat(60001)).toBe(60000);
    expect(negotiateParams({ heartbeat_ms: 0 }, { ...agent, heartbeat_ms: 500 }).heartbeat_ms).toBe(1000);
  });

  it('never streams when the agent does not', () => {
    expect(negotiateParams({ streaming: true }, { ...agent, streaming: false }).streaming).toBe(false);
    expect(negotiateParams({}, { ...agent, streaming: false }).streaming).toBe(false);
  });

  it('derives agent defaults from the card limits, preferring the per-session task limit', () => {
    expect(agentDefaults(sampleCard('a', [], { max_message_bytes: 4096, max_concurrent_tasks: 9 }))).toMatchObject({
      max_message_bytes: 4096,
      max_concurrent_tasks: 9,
    });
    expect(agentDefaults(sampleCard('a', [], { max_tasks_per_session: 3 })).max_concurrent_tasks).toBe(3);
    expect(agentDefaults(sampleCard('a'), { heartbeat_ms: 2000 }).heartbeat_ms).toBe(2000);
    expect(DEFAULT_PARAMS.max_message_bytes).toBe(1048576);
  });

  it('confirms final params member by member, ignoring members the final params lack (spec: handshake#ready)', () => {
    const final = negotiateParams({}, DEFAULT_PARAMS);
    expect(confirmsParams({ ...final, 'x-acme': 1 }, final)).toBe(true);
    expect(confirmsParams(Object.fromEntries(Object.entries(final).reverse()), final)).toBe(true);
    const { streaming: _s, ...short } = final;
    expect(confirmsParams(short, final)).toBe(false);
    expect(confirmsParams({ ...final, integrity: { alg: 'hmac-sha256', key_id: 'k' } }, final)).toBe(false);
    expect(confirmsParams(null, final)).toBe(false);
  });

  it('compares params in canonical form, whatever the member order (spec: handshake#ready)', () => {
    const final = negotiateParams({}, agent);
    expect(sameParams(final, Object.fromEntries(Object.entries(final).reverse()))).toBe(true);
    expect(sameParams(final, { ...final, heartbeat_ms: final.heartbeat_ms + 1 })).toBe(false);
    expect(sameParams(final, { ...final, extra: 1 })).toBe(false);
    expect(sameParams(Number.NaN, Number.NaN)).toBe(false);
  });

  it('finds what an agent must not do to a proposal: raise limits, shorten heartbeats, change timeouts, stream, downgrade integrity', () => {
    const proposed: ProposedParams = {
      max_message_bytes: 2048,
      max_concurrent_tasks: 2,
      heartbeat_ms: 20000,
      request_timeout_ms: 500,
      streaming: false,
      integrity: { alg: 'hmac-sha256', key_id: 'k1' },
    };
    const good = negotiateParams(proposed, agent);
    expect(checkFinalParams(proposed, good)).toEqual([]);
    const bad = {
      ...good,
      max_message_bytes: 4096,
      max_concurrent_tasks: 3,
      heartbeat_ms: 15000,
      request_timeout_ms: 600,
      streaming: true,
      integrity: 'none' as const,
    };
    const problems = checkFinalParams(proposed, bad);
    expect(problems).toHaveLength(6);
    expect(checkFinalParams({}, { ...good, heartbeat_ms: 500 })[0]).toMatch(/outside/);
  });
});
