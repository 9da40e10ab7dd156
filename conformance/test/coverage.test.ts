import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repoPath } from '../paths.ts';
import { coverage } from '../../tools/check-coverage.ts';
import type { Case } from '../case.ts';
import { ALL_CASES } from '../cases/index.ts';
import { loadRequirements } from '../requirements.ts';

const req = (id: string, level: 'MUST' | 'SHOULD' | 'MAY' = 'MUST') => ({ id, level, anchor: 'x#y', text: `${id} text` });
const kase = (id: string, requirements: string[]) => ({ id, requirements }) as unknown as Case;

describe('requirement coverage (spec: conformance#traceability)', () => {
  it('lists MUSTs with neither a case nor an untestable reason, and unknown ids', () => {
    const r = coverage(
      [req('A-1'), req('A-2'), req('A-3'), req('A-4', 'SHOULD')],
      [kase('c1', ['A-1', 'Z-9'])],
      [
        { id: 'A-2', reason: 'cannot be observed on the wire' },
        { id: 'Q-1', reason: 'a reason that is long enough' },
      ],
    );
    expect(r.uncovered.map((u) => u.id)).toEqual(['A-3']);
    expect(r.unknownInCases).toEqual([{ case: 'c1', id: 'Z-9' }]);
    expect(r.unknownUntestable).toEqual(['Q-1']);
  });

  it('every case of the suite names only requirement ids the spec defines, and quotes them', () => {
    const index = loadRequirements();
    expect(index).not.toBeNull();
    for (const c of ALL_CASES) {
      expect(c.requirements.length, c.id).toBeGreaterThan(0);
      for (const id of c.requirements) expect(index!.has(id), `${c.id} → ${id}`).toBe(true);
    }
  });

  it('gives every case a unique, stable-looking id and an anchor', () => {
    const ids = ALL_CASES.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const c of ALL_CASES) {
      expect(c.id).toMatch(/^[a-z-]+(\.[a-z0-9-]+)+$/);
      expect(c.spec).toMatch(/^[a-z-]+#[a-z0-9-]+$/);
      expect(c.id.startsWith(`${c.profile}.`) || c.id.startsWith('resume.') || c.id.startsWith('core.')).toBe(true);
    }
  });

  it('cites only anchors that exist in spec/1.0 or in the 1.1 text, spec/1.1', () => {
    const anchors = new Set<string>();
    for (const f of readdirSync(repoPath('spec/1.1')).filter((n) => n.endsWith('.md'))) {
      const chapter = f.replace(/\.md$/, '');
      for (const m of readFileSync(repoPath(`spec/1.1/${f}`), 'utf8').matchAll(/\{#([a-z0-9-]+)\}/g)) anchors.add(`${chapter}#${m[1]}`);
    }
    for (const c of ALL_CASES) expect(anchors.has(c.spec), `${c.id} cites ${c.spec}`).toBe(true);
  });
});
