import { describe, expect, it } from 'vitest';
import { childTraceContext, newTraceparent, parseTraceparent, traceContextOf, traceDisagreement } from './trace-context.ts';
import { negotiateExtensions, negotiatesExtensions } from './extensions.ts';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
let counter = 0;
const random = (n: number) => Uint8Array.from({ length: n }, () => ++counter % 256);

describe('trace context (spec: envelope#trace-context)', () => {
  it('parses version 00 and refuses all-zero ids, other versions and upper case', () => {
    expect(parseTraceparent(TP)).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentId: '00f067aa0ba902b7', flags: '01' });
    expect(parseTraceparent(`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`)).toBeNull();
    expect(parseTraceparent(`00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`)).toBeNull();
    expect(parseTraceparent(TP.replace(/^00/, '01'))).toBeNull();
    expect(parseTraceparent(TP.toUpperCase())).toBeNull();
  });

  it('finds a trace_id or span_id that disagrees with the traceparent', () => {
    expect(traceDisagreement({ traceparent: TP, trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' })).toBeNull();
    expect(traceDisagreement({ traceparent: TP })).toBeNull();
    expect(traceDisagreement({ traceparent: TP, trace_id: 'a'.repeat(32) })).toMatch(/trace_id .* differs from the trace-id/);
    expect(traceDisagreement({ traceparent: TP, span_id: 'b'.repeat(16) })).toMatch(/span_id .* differs from the parent-id/);
  });

  it('makes a traceparent for a new task from a W3C trace_id, and a fresh one otherwise', () => {
    expect(newTraceparent(random, '4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7')).toBe(TP);
    const fresh = parseTraceparent(newTraceparent(random, 'not-a-w3c-id'));
    expect(fresh).not.toBeNull();
    expect(fresh!.traceId).not.toBe('not-a-w3c-id');
  });

  it('writes a fresh traceparent from 24 random bytes, drawing again while the trace-id or parent-id would be zero', () => {
    const draws = [
      new Uint8Array(24),
      Uint8Array.from({ length: 24 }, (_, i) => (i < 16 ? 0 : 1)),
      Uint8Array.from({ length: 24 }, (_, i) => i * 11),
    ];
    const scripted = (n: number) => {
      expect(n).toBe(24);
      return draws.shift()!;
    };
    expect(newTraceparent(scripted)).toBe('00-000b16212c37424d58636e79848f9aa5-b0bbc6d1dce7f2fd-01');
    expect(draws).toHaveLength(0);
    const tps = new Set(Array.from({ length: 50 }, () => newTraceparent((n) => crypto.getRandomValues(new Uint8Array(n)))));
    expect(tps.size).toBe(50);
    for (const tp of tps) expect(parseTraceparent(tp)).not.toBeNull();
  });

  it('gives a sub-task the same trace-id, flags, tracestate and baggage, and a parent-id of its own', () => {
    const child = childTraceContext({ traceparent: TP, tracestate: 'rojo=1', baggage: 'k=v' }, random);
    const p = parseTraceparent(child.traceparent)!;
    expect(p.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(p.flags).toBe('01');
    expect(p.parentId).not.toBe('00f067aa0ba902b7');
    expect(child).toMatchObject({ tracestate: 'rojo=1', baggage: 'k=v' });
  });

  it('reads the trace context members of metadata only with a traceparent', () => {
    expect(traceContextOf({ tracestate: 'a=b' })).toBeUndefined();
    expect(traceContextOf({ traceparent: TP, baggage: 'k=v', trace_id: 'x' })).toEqual({ traceparent: TP, baggage: 'k=v' });
  });
});

describe('negotiated extensions (spec: handshake#negotiated-extensions)', () => {
  const a = 'urn:example:a';
  const b = 'urn:example:b';
  it('uses what both list, in the order offered, each once', () => {
    expect(negotiateExtensions([{ uri: b }, { uri: a }, { uri: b }], [{ uri: a }, { uri: b }])).toEqual({ accepted: [b, a], missing: [] });
  });
  it('ignores an offered extension the agent lacks unless it is required', () => {
    expect(negotiateExtensions([{ uri: a }], [])).toEqual({ accepted: [], missing: [] });
    expect(negotiateExtensions([{ uri: a, required: true }], [])).toEqual({ accepted: [], missing: [a] });
  });
  it("names the agent's required extension the requester did not offer", () => {
    expect(negotiateExtensions(undefined, [{ uri: b, required: true }])).toEqual({ accepted: [], missing: [b] });
  });
  it('negotiates only from 1.1 on', () => {
    expect(negotiatesExtensions('1.0')).toBe(false);
    expect(negotiatesExtensions('1.1')).toBe(true);
  });
});
