/**
 * Where a case lives: conformance/cases/<profile>/<chapter>.<section>.ts holds the cases of one
 * profile and one spec anchor, and its profile's index lists it; defineCase takes the level and
 * the anchor from the first requirement unless a case says why not (spec: conformance#cases).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROFILES, defineCase, need, type Case } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { fail, miss, pass } from '../verdict.ts';
import type { CaseContext } from '../context.ts';

const CASES = new URL('../cases/', import.meta.url).pathname;

/** Every case file: a file of a profile folder whose name (without .ts) holds a dot. */
function caseFiles(): { profile: string; anchor: string; path: string }[] {
  const out: { profile: string; anchor: string; path: string }[] = [];
  for (const profile of readdirSync(CASES)) {
    if (!statSync(join(CASES, profile)).isDirectory()) continue;
    for (const name of readdirSync(join(CASES, profile))) {
      const base = name.replace(/\.ts$/, '');
      if (!base.includes('.')) continue;
      out.push({ profile, anchor: base.replace('.', '#'), path: join(CASES, profile, name) });
    }
  }
  return out;
}

describe('the case files', () => {
  it('have one folder per profile, and no other folder', () => {
    const folders = readdirSync(CASES).filter((n) => statSync(join(CASES, n)).isDirectory());
    expect(folders.sort()).toEqual([...PROFILES].sort());
  });

  it('hold the cases of their profile and anchor, each case in one file, every file in its profile index', async () => {
    const seen = new Map<string, string>();
    for (const f of caseFiles()) {
      const { cases } = (await import(f.path)) as { cases: Case[] };
      expect(cases.length, `${f.path} exports its cases as \`cases\``).toBeGreaterThan(0);
      for (const c of cases) {
        expect(`${c.profile} ${c.spec}`, `${c.id} in ${f.path}`).toBe(`${f.profile} ${f.anchor}`);
        expect(seen.has(c.id), `${c.id} is defined twice`).toBe(false);
        seen.set(c.id, f.path);
      }
    }
    expect([...seen.keys()].sort()).toEqual(ALL_CASES.map((c) => c.id).sort());
  });
});

describe('defineCase', () => {
  const body = async () => pass();

  it('takes the level and the anchor from the first requirement', () => {
    const c = defineCase({ id: 'core.x', title: 't', profile: 'core', requirements: ['TAP-HS-017', 'TAP-HS-016'], run: body });
    expect([c.level, c.spec]).toEqual(['SHOULD', 'handshake#timeouts']);
  });

  it('keeps an override that states its reason, and refuses one that states nothing new', () => {
    const c = defineCase({
      id: 'core.y',
      title: 't',
      profile: 'core',
      requirements: ['TAP-HS-016'],
      spec: 'handshake#overview',
      reason: 'a reason',
      run: body,
    });
    expect([c.level, c.spec]).toEqual(['MUST', 'handshake#overview']);
    expect(() =>
      defineCase({ id: 'core.z', title: 't', profile: 'core', requirements: ['TAP-HS-016'], level: 'MUST', reason: 'none', run: body }),
    ).toThrow(/core\.z gives a reason, but its level and spec are those of TAP-HS-016/);
  });

  it('names the case whose first requirement the index does not list', () => {
    expect(() => defineCase({ id: 'core.w', title: 't', profile: 'core', requirements: ['TAP-NOPE-001'], run: body })).toThrow(
      /case core\.w cites TAP-NOPE-001 first, which spec\/1\.0\/requirements\.json does not list/,
    );
  });

  it('runs the body inside attempt: need and require end it with their outcome, other errors go on', async () => {
    const ctx = {} as CaseContext;
    const stopped = defineCase({
      id: 'core.v',
      title: 't',
      profile: 'core',
      requirements: ['TAP-HS-016'],
      run: async () => {
        need(miss(fail('no reply')));
        return pass();
      },
    });
    expect(await stopped.run(ctx)).toEqual(fail('no reply'));
    const broken = defineCase({
      id: 'core.u',
      title: 't',
      profile: 'core',
      requirements: ['TAP-HS-016'],
      run: async () => {
        throw new Error('harness bug');
      },
    });
    await expect(broken.run(ctx)).rejects.toThrow('harness bug');
  });
});
