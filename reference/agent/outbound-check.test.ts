import { describe, expect, it } from 'vitest';
import { messageIds } from '../core/ids.ts';
import { buildMessage, type OutboundContext } from './outbound.ts';

const base: OutboundContext = {
  agentId: 'acme.agent',
  clock: { now: () => Date.parse('2026-01-01T00:00:00Z'), setTimeout: () => 0, clearTimeout: () => {} },
  random: (n) => new Uint8Array(n).fill(7),
  hmac: () => new Uint8Array(32),
};
const to = { target: 'acme.requester', sessionId: 'Jq3c8VhQeR2m7XkT1pNw4A' };
// A task.event without its sequence: the typed builder cannot know the stream needs one.
const broken = () => buildMessage({ ...base, validate: true }, to, 'task.event', { kind: 'state', state: 'running' }, { task_id: 't-1' });

describe('outbound messages', () => {
  it('are not checked against their schema unless asked', () => {
    expect(() => buildMessage(base, to, 'task.event', { kind: 'state', state: 'running' }, { task_id: 't-1' })).not.toThrow();
  });

  it('are checked, and a mismatch names its member, when validateOutbound is on (spec: messages#payload-validation)', () => {
    expect(broken).toThrow(/task\.event does not match its schema: \/sequence/);
    const ok = buildMessage(
      { ...base, validate: true },
      to,
      'task.event',
      { kind: 'state', state: 'running' },
      { task_id: 't-1', sequence: 1 },
    );
    expect(JSON.parse(ok).sequence).toBe(1);
  });

  it('take ids from the sender counter: a random prefix, then 1, 2, 3 in base 36 (spec: envelope#message-id)', () => {
    const out = { ...base, nextId: messageIds(base.random) };
    const ids = Array.from({ length: 40 }, () => JSON.parse(buildMessage(out, to, 'ping', {})).message_id as string);
    expect(new Set(ids).size).toBe(40);
    expect(ids[0]).toMatch(/^[A-Za-z0-9_-]{16}\.1$/);
    expect(ids[39]).toMatch(/\.14$/);
    expect(ids.every((id) => /^[A-Za-z0-9._:-]{1,128}$/.test(id))).toBe(true);
  });
});
