import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const dir = new URL('./', import.meta.url);
/** Platform calls and I/O; a call of a platform timer is I/O, declaring the injected Clock's `setTimeout(fn: …)` is not. */
const IMPURE = /\brequire\(|\bprocess\.|(?<!\.)\bsetTimeout\((?!\s*\w+\s*:)|\bsetInterval\(|\bfetch\(|\bBuffer\./;
const modules = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));

describe('the core is pure (spec: tap-1-0#abstract)', () => {
  it.each(modules)('%s imports no platform module and does no I/O', (file) => {
    const text = readFileSync(new URL(file, dir), 'utf8');
    expect(text).not.toMatch(/from ['"]node:/);
    expect(text).not.toMatch(IMPURE);
  });

  it('tells a call of the platform timer from a declaration of the injected clock', () => {
    expect('  setTimeout(fn: () => void, ms: number): TimerHandle;').not.toMatch(IMPURE);
    expect('this.clock.setTimeout(() => fire(), 5)').not.toMatch(IMPURE);
    expect('const t = setTimeout(fire, 5);').toMatch(IMPURE);
    expect('setTimeout(() => fire(), 5)').toMatch(IMPURE);
  });
});
