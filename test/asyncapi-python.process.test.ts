/** The message examples of asyncapi.yaml judged by Debian's python3-jsonschema, a validator no one here wrote (test/validators.testkit.ts). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import catalogue from '../schemas/v1/messages.json' with { type: 'json' };
import { exampleCases, pythonJudge, pythonMissing } from './validators.testkit.ts';

const FILE = fileURLToPath(new URL('../asyncapi.yaml', import.meta.url));

describe('asyncapi.yaml in python-jsonschema', () => {
  it('validates each message example against the file its payload names', () => {
    const cases = exampleCases(parseYaml(readFileSync(FILE, 'utf8')));
    expect(cases.length).toBeGreaterThanOrEqual(catalogue.messages.length);
    const missing = pythonMissing();
    if (missing) expect.fail(missing);
    expect(pythonJudge('bundle')(cases)).toEqual(cases.map(() => true));
  });
});
