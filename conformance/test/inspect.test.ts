import { describe, expect, it } from 'vitest';
import { inspectFrame } from '../inspect.ts';
import { SessionState } from '../session-state.ts';

const enc = new TextEncoder();
const frame = (text: string) => ({ bytes: enc.encode(text), oversized: false, byteLength: enc.encode(text).length });

function event(seq: number, extra: Record<string, unknown> = {}) {
  return {
    protocol: 'tap/1.0',
    message_id: `s-${seq}`,
    type: seq === 1 ? 'task.accepted' : 'task.event',
    source: 'agent-x',
    target: 'tap-conform',
    timestamp: '2025-03-14T09:26:51Z',
    session_id: 'Jq3c8VhQeR2m7XkT1pNw4A',
    task_id: 't-1',
    sequence: seq,
    ...(seq === 1
      ? { reply_to: 'c-1', payload: { capability: 'a.b', deadline: '2025-03-14T09:36:51Z' } }
      : { payload: { kind: 'state', state: 'running' } }),
    ...extra,
  };
}

function session(): SessionState {
  const s = new SessionState('tap-conform', 'agent-x');
  s.sessionId = 'Jq3c8VhQeR2m7XkT1pNw4A';
  s.bound = true;
  s.version = '1.0';
  return s;
}

describe('inspecting agent frames (spec: conformance#verdicts)', () => {
  it('names a non-JSON line on stdout as such, quoting it', () => {
    const r = inspectFrame(frame('starting worker 3...'), session(), 'stdio');
    expect(r.nonProtocol).toBe(true);
    expect(r.violations[0]).toBe(
      'the agent wrote a non-protocol line to stdout: "starting worker 3..." (stdout carries only TAP messages; logs go to stderr)',
    );
  });

  it('reports a frame nested deeper than 64 levels as an agent fault, without exhausting its stack (spec: limits#nesting)', () => {
    const r = inspectFrame(frame(`{"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`), session(), 'websocket');
    expect(r.msg).toBeUndefined();
    expect(r.violations[0]).toMatch(/^the agent sent a message nested deeper than 64 levels/);
    expect(
      inspectFrame(frame(JSON.stringify({ ...event(2), payload: { kind: 'state', state: 'running' } })), session(), 'stdio').violations,
    ).toEqual([]);
  });

  it('keeps only a cut copy of a message over the negotiated max_message_bytes, and still knows its byte-identical re-send', () => {
    const s = session();
    s.params = { max_message_bytes: 1000 } as SessionState['params'];
    const big = JSON.stringify(event(2, { payload: { kind: 'log', level: 'info', message: 'x'.repeat(300_000) } }));
    const r = inspectFrame(frame(big), s, 'stdio');
    expect(r.violations[0]).toBe(`the agent sent a ${big.length}-byte message, over the negotiated max_message_bytes of 1000`);
    expect(r.text!.length).toBeLessThan(70_000);
    expect((r.msg!.payload as { message: string }).message).toMatch(/^x{65536}… \(234464 more characters\)$/);
    expect(r.msg!.type).toBe('task.event');
    expect(inspectFrame(frame(big), s, 'stdio').resent).toBe(true);
    const other = inspectFrame(frame(big.replace('xxx"', 'xxy"')), s, 'stdio');
    expect(other.violations.join(' ')).toMatch(/sequence 2 was sent twice with different content|reused message_id s-2/);
  });

  it('reports schema violations of the agent', () => {
    const r = inspectFrame(frame(JSON.stringify({ ...event(2), payload: { kind: 'state' } })), session(), 'stdio');
    expect(r.violations.join(' ')).toMatch(/invalid against schemas\/v1/);
  });

  it('accepts a byte-identical re-send and flags a sequence gap', () => {
    const s = session();
    expect(inspectFrame(frame(JSON.stringify(event(1))), s, 'stdio').violations).toEqual([]);
    expect(inspectFrame(frame(JSON.stringify(event(1))), s, 'stdio').resent).toBe(true);
    const gap = inspectFrame(frame(JSON.stringify(event(3))), s, 'stdio');
    expect(gap.violations.join(' ')).toMatch(/sequence 3 follows 1/);
  });

  it('flags a wrong source, target or session', () => {
    const r = inspectFrame(
      frame(JSON.stringify(event(1, { source: 'someone', target: 'else', session_id: 'BBBBBBBBBBBBBBBBBBBBBB' }))),
      session(),
      'websocket',
    );
    const all = r.violations.join(' | ');
    expect(all).toMatch(/source "someone"/);
    expect(all).toMatch(/target "else"/);
    expect(all).toMatch(/session_id BBBB/);
  });

  it('flags invalid UTF-8 and binary frames', () => {
    const s = session();
    expect(inspectFrame({ bytes: new Uint8Array([0xc3, 0x28]), oversized: false, byteLength: 2 }, s, 'stdio').violations[0]).toMatch(
      /not valid UTF-8/,
    );
    expect(inspectFrame({ ...frame('{}'), binary: true }, s, 'websocket').violations[0]).toMatch(/binary/);
  });
});

describe('duplicate member names (spec: envelope#encoding)', () => {
  it('are found in any object, not inside strings', async () => {
    const { duplicateMember } = await import('../inspect.ts');
    expect(duplicateMember('{"a":1,"b":{"c":2,"c":3}}')).toBe('c');
    expect(duplicateMember('{"a":"\\"a\\":1","b":[{"a":1},{"a":2}]}')).toBeNull();
    expect(duplicateMember('{"type":"x","type":"y"}')).toBe('type');
  });
});
