import { describe, expect, it } from 'vitest';
import { newMessageId, newResumeToken, newSessionId, pooled, webRandom } from './ids.ts';
import { counterRandom } from './samples.testkit.ts';

describe('ids', () => {
  it('makes session ids of 128 random bits in 22 base64url characters (spec: handshake#ack)', () => {
    const calls: number[] = [];
    const id = newSessionId((n) => (calls.push(n), new Uint8Array(n).fill(0xff)));
    expect(calls).toEqual([16]);
    expect(id).toBe('_____________________w');
    expect(id).toMatch(/^[A-Za-z0-9_-]{22,128}$/);
  });

  it('makes resume tokens of 256 random bits (spec: handshake#ack)', () => {
    expect(newResumeToken(counterRandom())).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('makes message ids that fit the envelope pattern (spec: envelope#message-id)', () => {
    expect(newMessageId(counterRandom())).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  });

  it('draws fresh bytes for every id', () => {
    const random = counterRandom();
    expect(newMessageId(random)).not.toBe(newMessageId(random));
    expect(newSessionId()).not.toBe(newSessionId());
  });

  it('falls back to the platform CSPRNG through the Web Crypto global', () => {
    expect(webRandom(16)).toHaveLength(16);
  });
});

describe('pooled', () => {
  it('hands out each byte of the source once, in order, drawing a pool at a time', () => {
    let next = 0;
    const calls: number[] = [];
    const counting = (n: number) => {
      calls.push(n);
      return Uint8Array.from({ length: n }, () => next++ % 256);
    };
    const r = pooled(counting, 32);
    const got = [...Array(5)].flatMap(() => [...r(16)]);
    expect(got).toEqual([...Array(80).keys()]);
    expect(calls).toEqual([32, 32, 32]);
    expect([...r(40)]).toHaveLength(40);
    expect(calls.at(-1)).toBe(40);
  });

  it('gives ids that differ', () => {
    const r = pooled(webRandom);
    const ids = new Set([...Array(1000)].map(() => newMessageId(r)));
    expect(ids.size).toBe(1000);
  });
});
