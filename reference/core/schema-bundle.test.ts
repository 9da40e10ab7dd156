import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderBundle } from '../../tools/emit-schema-bundle.ts';
import { SCHEMA_BUNDLE, SCHEMA_FILES } from './schema-bundle.ts';

const dir = new URL('../../schemas/v1/', import.meta.url);

describe('schema bundle', () => {
  it('is what tools/emit-schema-bundle.ts generates from schemas/v1 (no drift)', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.schema.json'));
    expect(readFileSync(new URL('./schema-bundle.ts', import.meta.url), 'utf8')).toBe(renderBundle(files));
  });

  it('keys each schema by the file name its $id ends with', () => {
    for (const [file, schema] of Object.entries(SCHEMA_FILES)) expect((schema as { $id: string }).$id.endsWith('/' + file)).toBe(true);
    expect(SCHEMA_BUNDLE).toHaveLength(Object.keys(SCHEMA_FILES).length);
  });
});
