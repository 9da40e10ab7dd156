import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeFrame, decodeText, encodeMessage, fitsUtf8, utf8ByteLength, type DecodeResult, type Refused } from './decode.ts';
import { MAX_NESTING_DEPTH, nestedDeeperThan } from './ijson.ts';
import { frameOf, samplePing } from './samples.testkit.ts';

const MAX = 1024;
const decode = (content: string | Uint8Array, extra = {}, rejectDuplicateMembers = false) =>
  decodeFrame(frameOf(content, extra), { maxMessageBytes: MAX, rejectDuplicateMembers });
const refused = (r: DecodeResult): Refused => {
  expect(r.ok).toBe(false);
  return r as Refused;
};
const bytes = (...parts: (string | number[])[]) => {
  const chunks = parts.map((p) => (typeof p === 'string' ? new TextEncoder().encode(p) : Uint8Array.from(p)));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) out.set(c, (at += c.length) - c.length);
  return out;
};
const ping = JSON.stringify(samplePing({ task_id: 't-1' }));

describe('decodeFrame', () => {
  it('returns the object and its text when every check passes (spec: errors#order-of-checks)', () => {
    const r = decode(ping);
    expect(r).toEqual({ ok: true, message: JSON.parse(ping), text: ping });
  });

  it('recovers a well-formed source for addressing the error, and no ill-formed one (spec: errors#error-target)', () => {
    const { timestamp: _t, ...noTime } = samplePing();
    expect(refused(decode(JSON.stringify(noTime))).source).toBe(samplePing().source);
    expect(refused(decode(JSON.stringify({ ...noTime, source: 'Not An Id' }))).source).toBeUndefined();
    expect(refused(decode(`{"source":"acme.coordinator","type":"ping",`)).source).toBe('acme.coordinator');
    expect(refused(decode('not json at all')).source).toBeUndefined();
  });

  describe('size', () => {
    it('refuses a frame longer than max_message_bytes with MESSAGE_TOO_LARGE (spec: limits#message-size)', () => {
      const big = JSON.stringify(samplePing({ payload: { pad: 'x'.repeat(MAX) } }));
      const r = refused(decode(big));
      expect(r.error).toMatchObject({
        code: 'MESSAGE_TOO_LARGE',
        retryable: false,
        details: { max_message_bytes: MAX, byte_length: utf8ByteLength(big) },
      });
      expect(r.replyTo).toBe('s-19');
    });

    it('accepts a frame of exactly max_message_bytes, counting UTF-8 bytes rather than characters', () => {
      const base = JSON.stringify(samplePing({ payload: { pad: '' } }));
      const room = MAX - utf8ByteLength(base);
      const exact = JSON.stringify(samplePing({ payload: { pad: 'é'.repeat(Math.floor(room / 2)) + 'x'.repeat(room % 2) } }));
      expect(utf8ByteLength(exact)).toBe(MAX);
      expect(exact.length).toBeLessThan(MAX);
      expect(decode(exact).ok).toBe(true);
      expect(refused(decode(exact.replace('"pad":"', '"pad":"x'))).error.code).toBe('MESSAGE_TOO_LARGE');
    });

    it('judges a frame carried as text (the memory pair) as it judges the same frame as bytes', () => {
      const base = JSON.stringify(samplePing({ payload: { pad: '' } }));
      const room = MAX - utf8ByteLength(base);
      const exact = JSON.stringify(samplePing({ payload: { pad: 'é'.repeat(Math.floor(room / 2)) + 'x'.repeat(room % 2) } }));
      const asText = (t: string) => {
        const b = new TextEncoder().encode(t);
        return decodeFrame({ text: t, bytes: b, oversized: false, byteLength: b.byteLength }, { maxMessageBytes: MAX });
      };
      const samples = [ping, exact, exact.replace('"pad":"', '"pad":"x'), '{"a":1,"a":2}', '[1]', 'not json', '\ufeff' + ping];
      for (const t of samples) expect(asText(t)).toEqual(decode(t));
      fc.assert(
        fc.property(fc.json(), (t) => {
          expect(asText(t)).toEqual(decode(t));
        }),
      );
    });

    it('trusts the reader: an oversized prefix is MESSAGE_TOO_LARGE with reply_to recovered from the prefix', () => {
      const prefix = new TextEncoder().encode(ping.slice(0, 120));
      const r = refused(decodeFrame({ bytes: prefix, oversized: true, byteLength: MAX + 1 }, { maxMessageBytes: MAX }));
      expect(r.error.code).toBe('MESSAGE_TOO_LARGE');
      expect(r.replyTo).toBe('s-19');
    });

    it('checks size first: an oversized frame of invalid UTF-8 is MESSAGE_TOO_LARGE (spec: errors#order-of-checks)', () => {
      const r = refused(decode(bytes([0xff, 0xfe], 'x'.repeat(MAX))));
      expect(r.error.code).toBe('MESSAGE_TOO_LARGE');
      expect(r.replyTo).toBeUndefined();
    });
  });

  describe('MALFORMED_MESSAGE', () => {
    it('refuses a binary frame', () => {
      expect(refused(decode(ping, { binary: true })).error).toMatchObject({
        code: 'MALFORMED_MESSAGE',
        details: { reason: 'binary-frame' },
      });
    });

    it.each([
      ['a stray 0xff byte', [0xff]],
      ['an overlong encoding', [0xc0, 0xaf]],
      ['an encoded surrogate', [0xed, 0xa0, 0x80]],
      ['a truncated sequence', [0xe2, 0x82]],
    ])('refuses invalid UTF-8: %s (spec: envelope#encoding)', (_name, bad) => {
      const r = refused(decode(bytes('{"message_id":"m-1","x":"', bad, '"}')));
      expect(r.error).toMatchObject({ code: 'MALFORMED_MESSAGE', details: { reason: 'utf-8' } });
      expect(r.replyTo).toBe('m-1');
    });

    it('refuses a BOM as MALFORMED_MESSAGE (spec: envelope#encoding)', () => {
      expect(refused(decode(bytes([0xef, 0xbb, 0xbf], ping))).error).toMatchObject({
        code: 'MALFORMED_MESSAGE',
        details: { reason: 'bom' },
      });
    });

    it.each([
      ['', 'empty'],
      ['{"a":', 'truncated'],
      ['{"a":1}x', 'trailing text'],
      ["{'a':1}", 'single quotes'],
      ['{"a":NaN}', 'NaN'],
    ])('refuses invalid JSON %j (%s) and says where', (text) =>
      expect(refused(decode(text)).error).toMatchObject({ code: 'MALFORMED_MESSAGE', details: { reason: 'json' } }),
    );

    it('recovers reply_to from invalid JSON when the message_id is readable (spec: errors#correlation)', () => {
      const r = refused(decode('{"message_id":"c-7","task_id":"t-9","type":"task.status",'));
      expect(r.replyTo).toBe('c-7');
      expect(r.taskId).toBe('t-9');
    });

    it.each([
      ['[]', 'an array'],
      ['[{"message_id":"m"}]', 'an array'],
      ['"text"', 'a string'],
      ['42', 'a number'],
      ['null', 'null'],
      ['true', 'a boolean'],
    ])('refuses the top-level value %s: a message is an object (spec: envelope#encoding)', (text, what) => {
      const r = refused(decode(text));
      expect(r.error).toMatchObject({ code: 'MALFORMED_MESSAGE', details: { reason: 'not-object' } });
      expect(r.error.message).toContain(what);
    });

    it('refuses duplicate member names when asked, at any depth (spec: integrity#verification)', () => {
      const text = ping.replace('"payload":{}', '"payload":{"a":{"b":1,"b":2}}');
      const r = refused(decode(text, {}, true));
      expect(r.error).toMatchObject({
        code: 'MALFORMED_MESSAGE',
        details: { reason: 'duplicate-member', path: '/payload/a', member: 'b' },
      });
      expect(r.replyTo).toBe('s-19');
      expect(decode(text, {}, false).ok).toBe(true);
    });
  });

  describe('INVALID_MESSAGE', () => {
    it.each([
      ['9007199254740991', true],
      ['9007199254740992', false],
      ['-9007199254740992', false],
      ['1e400', false],
      ['-0', true],
      ['1e308', true],
      ['-1.5e300', true],
      ['100000000000000000000', false],
    ])('applies I-JSON to the number %s (spec: envelope#encoding)', (num, ok) => {
      const r = decode(ping.replace('"payload":{}', `"payload":{"n":${num}}`));
      expect(r.ok).toBe(ok);
      if (!ok)
        expect((r as Refused).error.details).toEqual({ issues: [{ path: '/payload/n', keyword: 'i-json', message: expect.any(String) }] });
    });

    it('names the rule, the path and the value of an integer out of range (spec: envelope#encoding, TAP-ENV-002)', () => {
      const r = refused(decode(ping.replace('"payload":{}', '"payload":{"input":{"xs":[1,1e308,9007199254740993]}}')));
      expect(r.error.code).toBe('INVALID_MESSAGE');
      expect(r.error.message).toBe(
        'the message is not I-JSON (TAP-ENV-002): at /payload/input/xs/2, 9007199254740993 is an integer outside ±(2^53−1)',
      );
    });

    it('refuses a lone surrogate as INVALID_MESSAGE with keyword i-json (spec: envelope#encoding)', () => {
      const r = refused(decode(ping.replace('"payload":{}', '"payload":{"s":"\\ud800"}')));
      expect(r.error.code).toBe('INVALID_MESSAGE');
      expect(r.error.details).toEqual({
        issues: [{ path: '/payload/s', keyword: 'i-json', message: expect.stringContaining('surrogate') }],
      });
    });

    it('puts duplicates before I-JSON, and I-JSON before the envelope schema (spec: errors#order-of-checks)', () => {
      expect(refused(decode('{"n":9007199254740992,"n":1}', {}, true)).error.code).toBe('MALFORMED_MESSAGE');
      const r = refused(decode('{"n":9007199254740992}'));
      expect(r.error.code).toBe('INVALID_MESSAGE');
      expect((r.error.details as { issues: { keyword: string }[] }).issues[0]!.keyword).toBe('i-json');
    });

    it('refuses an envelope that fails its schema, listing every issue (spec: envelope#fields)', () => {
      const { timestamp: _t, ...rest } = samplePing({ source: 'Bad Id', task_id: 't-1' });
      const r = refused(decode(JSON.stringify(rest)));
      expect(r.error.code).toBe('INVALID_MESSAGE');
      const issues = (r.error.details as { issues: { path: string }[] }).issues.map((i) => i.path).sort();
      expect(issues).toEqual(['/source', '/timestamp']);
      expect(r.replyTo).toBe('s-19');
      expect(r.taskId).toBe('t-1');
    });

    it('refuses "*" as target outside handshake.init with a sentence saying so (spec: envelope#source-and-target)', () => {
      const r = refused(decode(JSON.stringify(samplePing({ target: '*' }))));
      expect(r.error.code).toBe('INVALID_MESSAGE');
      expect(r.error.message).toContain('"*" is a valid target only in handshake.init');
    });

    it('tells the type when readable, since nothing answers an error (spec: errors#no-replies-to-errors)', () => {
      expect(refused(decode(JSON.stringify(samplePing({ type: 'error', source: 'Bad' })))).type).toBe('error');
      expect(refused(decode('{"type":"error","message_id":"m-1",')).type).toBe('error');
    });

    it('does not take reply_to from a message_id that breaks its pattern', () => {
      const r = refused(decode(JSON.stringify(samplePing({ message_id: 'has space', task_id: 'Bad' }))));
      expect(r.replyTo).toBeUndefined();
      expect(r.taskId).toBeUndefined();
    });

    it('puts invalid JSON before the schema: a broken frame is never INVALID_MESSAGE', () => {
      expect(refused(decode('{"protocol":"tap/1.0",}')).error.code).toBe('MALFORMED_MESSAGE');
    });
  });

  it('accepts unknown members and leaves unknown types to the later type check (spec: envelope#extensibility)', () => {
    expect(decode(JSON.stringify(samplePing({ x_new: [1], type: 'task.future', payload: { 'x-a': 1 } }))).ok).toBe(true);
  });

  it('never throws, whatever the bytes (fast-check)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), fc.boolean(), (data, dups) => {
        const r = decodeFrame(frameOf(data), { maxMessageBytes: MAX, rejectDuplicateMembers: dups });
        if (!r.ok) expect(['MESSAGE_TOO_LARGE', 'MALFORMED_MESSAGE', 'INVALID_MESSAGE']).toContain(r.error.code);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary JSON-like text either (fast-check)', () => {
    const jsonish = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.jsonValue().map((v) => JSON.stringify(v) ?? ''),
      fc.jsonValue().map((v) => JSON.stringify({ ...samplePing(), payload: { v } })),
      fc.string({
        unit: fc.constantFrom('{', '}', '[', ']', '"', ':', ',', '\\', 'u', 'd', '8', '0', '1', 'e', '9', '-', ' '),
        maxLength: 200,
      }),
    );
    fc.assert(
      fc.property(jsonish, fc.boolean(), (text, dups) => {
        const r = decodeText(text, dups);
        if (r.ok) expect(r.message).toBeTypeOf('object');
      }),
      { numRuns: 1000 },
    );
  });
});

describe('encodeMessage and utf8ByteLength', () => {
  it('serializes without white space and round-trips (spec: envelope#encoding)', () => {
    const msg = samplePing();
    expect(encodeMessage(msg)).toBe(JSON.stringify(msg));
    expect(decodeText(encodeMessage(msg))).toMatchObject({ ok: true, message: msg });
  });

  it('counts the UTF-8 bytes a text encodes to, lone surrogates as U+FFFD (spec: limits#message-size)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('\ud800', '\udc00', 'a', 'é') }), (a, b) => {
        const s = a + b;
        expect(utf8ByteLength(s)).toBe(new TextEncoder().encode(s).length);
      }),
    );
  });
});

describe('nesting (spec: limits#nesting)', () => {
  const nested = (depth: number) => `{"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
  const pingNested = (depth: number) => JSON.stringify(samplePing({ payload: { deep: JSON.parse(nested(depth - 2)) } }));

  it('takes a message nested exactly MAX_NESTING_DEPTH levels deep', () => {
    expect(decodeText(pingNested(MAX_NESTING_DEPTH), true).ok).toBe(true);
  });

  it('refuses one level more with MALFORMED_MESSAGE, reason nesting, and keeps the message_id for reply_to', () => {
    const text = pingNested(MAX_NESTING_DEPTH + 1);
    const r = refused(decodeText(text, true));
    expect(r.error).toMatchObject({ code: 'MALFORMED_MESSAGE', details: { reason: 'nesting', max_depth: MAX_NESTING_DEPTH } });
    expect(r.replyTo).toBe(JSON.parse(text).message_id);
  });

  it('answers a 5 000-deep frame without exhausting the stack, with and without duplicate checks', () => {
    for (const dups of [true, false]) {
      expect(refused(decodeText(nested(5000), dups)).error.details).toMatchObject({ reason: 'nesting' });
      expect(refused(decodeText(`[${nested(1_000_000)}]`, dups)).error.code).toBe('MALFORMED_MESSAGE');
    }
  });

  it('reports too deep nesting before an I-JSON violation that comes earlier in the text (spec: errors#order-of-checks)', () => {
    const text = `{"big":9007199254740993,"deep":${nested(MAX_NESTING_DEPTH)}}`;
    expect(refused(decodeText(text)).error.details).toMatchObject({ reason: 'nesting' });
    expect(nestedDeeperThan('{"s":"[[[[\\"[["}', 1)).toBe(false);
    expect(nestedDeeperThan('{"s":[{}]}', 2)).toBe(true);
  });

  it('judges nesting the same whether the text has few brackets or many inside strings (spec: limits#nesting)', () => {
    const deep = (n: number) => '{"a":'.repeat(n - 1) + '{}' + '}'.repeat(n - 1);
    // Exactly at the limit, and one past it: few brackets, settled by counting them.
    expect(nestedDeeperThan(deep(MAX_NESTING_DEPTH), MAX_NESTING_DEPTH)).toBe(false);
    expect(nestedDeeperThan(deep(MAX_NESTING_DEPTH + 1), MAX_NESTING_DEPTH)).toBe(true);
    // Brackets in strings count toward the quick bound but not toward the depth.
    const noisy = `{"s":${JSON.stringify('{['.repeat(100))},"d":${deep(3)}}`;
    expect(nestedDeeperThan(noisy, 4)).toBe(false);
    expect(nestedDeeperThan(noisy, 3)).toBe(true);
  });
});

describe('fitsUtf8 (spec: limits#message-size)', () => {
  it('agrees with the UTF-8 length, with and without counting', () => {
    for (const text of ['', 'abc', 'é'.repeat(10), '€'.repeat(10), '😀'.repeat(5), 'a\ud800b']) {
      const bytes = new TextEncoder().encode(text).length;
      for (const max of [0, bytes - 1, bytes, bytes + 1, text.length * 3]) {
        expect(fitsUtf8(text, max), `${JSON.stringify(text)} in ${max}`).toBe(bytes <= max);
      }
    }
  });
});
