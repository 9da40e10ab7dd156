import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  catalogueTypes,
  checkInvalid,
  createAjv,
  decodeStrict,
  fixtureMac,
  invalidFixtures,
  orphanSidecars,
  checkDocument,
  validateWith,
  validFixtures,
  workspaceFixtures,
} from '../tools/validate-fixtures.ts';
import { artifactSyntaxProblem } from '../reference/workspace/artifacts.ts';

const ajv = createAjv(); // Ajv 2020-12, strict, formats, discriminator, every schemas/v1 file
const valid = validFixtures();
const invalid = invalidFixtures();
const objects = invalid.filter((f) => !f.raw);
const raw = invalid.filter((f) => f.raw);
const label = (f: { file: string }) => f.file.replace(/^fixtures\//, '');

describe('fixtures/messages (spec: envelope, messages)', () => {
  it('holds at least 45 valid messages', () => {
    expect(valid.length).toBeGreaterThanOrEqual(45);
  });

  it('has at least one valid message for every type of the catalogue, and no folder outside it', () => {
    const types = catalogueTypes();
    expect(new Set(valid.map((f) => f.type))).toEqual(new Set(types));
  });

  it.each(valid.map((f) => [label(f), f] as const))('%s passes its type schema and message.schema.json', (_, f) => {
    expect(f.message.type).toBe(f.type);
    expect(validateWith(ajv, `${f.type}.schema.json`, f.message)).toBeNull();
    expect(validateWith(ajv, 'message.schema.json', f.message)).toBeNull();
  });

  it('signs with HMAC-SHA256 over the canonical form without signature.value (spec: security#integrity)', () => {
    const signed = valid.filter((f) => f.message.signature);
    expect(signed.map((f) => f.type).sort()).toEqual(['handshake.init', 'task.request']);
    for (const f of signed) {
      const sig = f.message.signature as { value: string };
      expect(sig.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(fixtureMac(f.message)).toBe(sig.value);
      expect(fixtureMac({ ...f.message, timestamp: '2025-03-14T09:30:00.121Z' })).not.toBe(sig.value);
      expect(fixtureMac({ ...f.message, 'x-added': 1 })).not.toBe(sig.value);
    }
  });

  it('keeps schemas open: unknown members and x- payload keys are valid (spec: envelope#extensibility)', () => {
    const f = valid.find((v) => v.name === 'unknown-fields-and-extensions')!;
    expect(Object.keys(f.message)).toContain('x-routing-hint');
    expect(Object.keys(f.message.payload as object).filter((k) => k.startsWith('x-')).length).toBeGreaterThan(0);
  });

  it('uses "*" as target only in handshake.init', () => {
    for (const f of valid) if (f.message.target === '*') expect(f.type).toBe('handshake.init');
  });

  it('accepts the I-JSON boundary ±(2^53−1)', () => {
    const f = valid.find((v) => v.name === 'max-safe-integer-input')!;
    expect((f.message.payload as { input: { n: number } }).input.n).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('fixtures/invalid (spec: errors#bad-input)', () => {
  it('holds at least 45 invalid JSON objects, plus malformed and non-I-JSON frames', () => {
    expect(objects.length).toBeGreaterThanOrEqual(45);
    expect(raw.filter((f) => f.folder === 'malformed').length).toBeGreaterThanOrEqual(6);
    expect(raw.filter((f) => f.folder === 'i-json').length).toBeGreaterThanOrEqual(2);
  });

  it('pairs every fixture with a well-formed .expect.json sidecar', () => {
    expect(orphanSidecars()).toEqual([]);
    for (const f of invalid) {
      expect(['INVALID_MESSAGE', 'MALFORMED_MESSAGE']).toContain(f.expect.error);
      expect(f.expect.keyword).toMatch(/^[a-zA-Z-]+$/);
      expect(f.expect.path === '' || f.expect.path.startsWith('/')).toBe(true);
      expect(f.expect.why).toMatch(/\.$/);
    }
  });

  it('names folders after the envelope, a catalogue type, malformed or i-json', () => {
    const allowed = new Set(['envelope', 'malformed', 'i-json', ...catalogueTypes()]);
    for (const f of invalid) expect(allowed).toContain(f.folder);
    for (const f of raw) expect(['malformed', 'i-json']).toContain(f.folder);
  });

  it.each(objects.map((f) => [label(f), f] as const))('%s fails with its sidecar keyword at its sidecar path', (_, f) => {
    expect(checkInvalid(ajv, f)).toEqual([]);
  });

  it.each(raw.map((f) => [label(f), f] as const))('%s decodes to its sidecar error', (_, f) => {
    const d = decodeStrict(f.bytes, f.expect.decode ?? {});
    expect(d.ok).toBe(false);
    if (d.ok) return;
    expect({ error: d.error, keyword: d.keyword, path: d.path }).toEqual({
      error: f.expect.error,
      keyword: f.expect.keyword,
      path: f.expect.path,
    });
  });

  it('accepts duplicate member names when the receiver does not refuse them', () => {
    for (const f of raw.filter((x) => x.expect.decode?.rejectDuplicateMembers)) expect(decodeStrict(f.bytes).ok).toBe(true);
  });
});

const decodePath = fileURLToPath(new URL('../reference/core/decode.ts', import.meta.url));

describe.runIf(existsSync(decodePath))('reference decodeFrame agrees with the fixtures', () => {
  type Decode = (
    frame: { bytes: Uint8Array; oversized: boolean; byteLength: number },
    opts: { maxMessageBytes: number; rejectDuplicateMembers: boolean },
  ) => { ok: boolean; error?: { code: string } };
  const load = async () => ((await import(/* @vite-ignore */ decodePath)) as { decodeFrame: Decode }).decodeFrame;
  const decode = async (bytes: Uint8Array, reject = false) =>
    (await load())({ bytes, oversized: false, byteLength: bytes.length }, { maxMessageBytes: 1 << 20, rejectDuplicateMembers: reject });

  it.each(raw.map((f) => [label(f), f] as const))('%s', async (_, f) => {
    const d = await decode(f.bytes, f.expect.decode?.rejectDuplicateMembers ?? false);
    expect(d.ok).toBe(false);
    expect(d.error?.code).toBe(f.expect.error);
  });

  it.each(objects.filter((f) => f.folder === 'envelope').map((f) => [label(f), f] as const))(
    '%s fails the envelope check',
    async (_, f) => {
      const d = await decode(f.bytes);
      expect(d.ok).toBe(false);
      expect(d.error?.code).toBe('INVALID_MESSAGE');
    },
  );

  it('decodes every valid fixture', async () => {
    for (const f of valid) expect((await decode(new TextEncoder().encode(JSON.stringify(f.message)))).ok).toBe(true);
  });
});

describe('fixtures/workspace: task records and the artifact-path family (spec: bindings-workspace#artifacts)', () => {
  const docs = workspaceFixtures();
  const artifactOf = (v: unknown) => (v as { context: { history: { artifacts: string[] }[] } }).context.history[0]!.artifacts;

  it('holds valid records and an invalid artifact path for each escape: .., absolute, backslash, NUL, line breaks', () => {
    expect(docs.valid.length).toBeGreaterThanOrEqual(2);
    const paths = docs.invalid.map((f) => artifactOf(f.value)[1]!);
    for (const bad of ['\n', '\r', '\u2028', '\u2029', '\u0000', '\\', '..']) expect(paths.some((p) => p.includes(bad))).toBe(true);
    expect(paths.some((p) => p.endsWith('\n'))).toBe(true);
  });

  it.each([...docs.valid, ...docs.invalid].map((f) => [f.file.replace(/^fixtures\//, ''), f] as const))(
    '%s is judged by its schema as its sidecar says',
    (_, f) => {
      expect(checkDocument(ajv, f)).toEqual([]);
    },
  );

  it('the reference path check refuses every invalid artifact path and accepts every valid one', () => {
    for (const f of docs.invalid) expect(artifactSyntaxProblem(artifactOf(f.value)[1]!), f.file).not.toBeNull();
    for (const f of docs.valid) for (const p of artifactOf(f.value)) expect(artifactSyntaxProblem(p), p).toBeNull();
  });
});
