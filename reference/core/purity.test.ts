import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const dir = new URL('./', import.meta.url);
const modules = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));

describe('the core is pure (spec: tap-1-0#abstract)', () => {
  it.each(modules)('%s imports no platform module and does no I/O', (file) => {
    const text = readFileSync(new URL(file, dir), 'utf8');
    expect(text).not.toMatch(/from ['"]node:/);
    expect(text).not.toMatch(/\brequire\(|\bprocess\.|\bsetTimeout\(|\bsetInterval\(|\bfetch\(|\bBuffer\./);
  });
});
