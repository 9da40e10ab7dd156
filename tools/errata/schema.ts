/**
 * The JSON Schema of spec/1.0/errata.json and of spec/1.0/first-text.json, as TypeBox values that
 * are also the types (tools/errata/errata.schema.json is emitted from them), and their validation.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrataFile, Erratum } from '../../conformance/errata.ts';

const REQUIREMENT_ID = '^TAP-[A-Z]+-[0-9]{3}$';

export const ErratumSchema = Type.Object(
  {
    id: Type.String({
      pattern: '^E1-[a-z0-9]+(-[a-z0-9]+)*$',
      description: 'Stable id: E1- (an erratum of 1.0), the area in lower case, then a few words; never reused for another change.',
    }),
    date: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'The day the change was made (YYYY-MM-DD).' }),
    kind: Type.Union([Type.Literal('added'), Type.Literal('changed'), Type.Literal('clarified')], {
      description:
        'added: new requirements; changed: what a requirement asks of an implementation is different (it may add ids beside); clarified: the wording changed, what it asks did not.',
    }),
    requirements: Type.Array(Type.String({ pattern: REQUIREMENT_ID }), {
      minItems: 1,
      uniqueItems: true,
      description: 'The requirement ids of spec/1.0/requirements.json that the change added or changed.',
    }),
    summary: Type.String({ minLength: 20, description: 'What 1.0 requires now, in one or two sentences; reports quote it.' }),
    why: Type.String({ minLength: 20, description: 'Why it changed, as a sentence an implementer of 1.0 understands.' }),
    cases: Type.Array(Type.String({ minLength: 1 }), {
      uniqueItems: true,
      description:
        "Every conformance case whose requirements list one of the erratum's requirements, in suite order (tools/check-errata.ts --write fills them).",
    }),
    texts: Type.Record(Type.String({ pattern: REQUIREMENT_ID }), Type.String({ minLength: 1 }), {
      description:
        "Each requirement's sentence as this erratum left it, as requirements.json states it; a later change to the sentence needs a later erratum.",
    }),
  },
  { additionalProperties: false, title: 'Erratum', description: 'One normative change to TAP 1.0 since its first text.' },
);

export const ErrataFileSchema = Type.Object(
  {
    protocol: Type.Literal('tap/1.0'),
    description: Type.String(),
    errata: Type.Array(ErratumSchema, { description: 'Every erratum, oldest first: a later one supersedes the texts of an earlier one.' }),
  },
  {
    additionalProperties: false,
    title: 'TAP 1.0 errata',
    description: 'spec/1.0/errata.json: every normative change to TAP 1.0 since its first text.',
  },
);

export const FirstTextSchema = Type.Object(
  {
    protocol: Type.Literal('tap/1.0'),
    description: Type.String(),
    commit: Type.String({ pattern: '^[0-9a-f]{40}$' }),
    date: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' }),
    requirements: Type.Array(
      Type.Object({ id: Type.String({ pattern: REQUIREMENT_ID }), text: Type.String() }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false, title: 'The first text of TAP 1.0' },
);
export type FirstText = Static<typeof FirstTextSchema>;

/** True when two types are the same both ways. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The schema and the type tap-conform reads (conformance/errata.ts) describe the same file; tsc fails otherwise. */
export const SCHEMA_MATCHES_TYPE: Same<Static<typeof ErrataFileSchema>, ErrataFile> & Same<Static<typeof ErratumSchema>, Erratum> = true;

/** The file tools/errata/errata.schema.json: the schema of errata.json as plain JSON Schema 2020-12. */
export function errataSchemaJson(): string {
  const doc = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...ErrataFileSchema };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** Where a value fails a schema, one line per problem ("errata/3/kind: must be equal to one of …"), or none. */
export function schemaProblems(schema: TSchema, value: unknown, file: string): string[] {
  const ajv = new Ajv2020({ strict: true, allErrors: true, keywords: ['since'] });
  const validate = ajv.compile(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => {
    const where = e.instancePath || '/';
    const extra = e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : '';
    return `${file}${where}: ${e.message ?? 'is invalid'}${extra}`;
  });
}
