/**
 * The coder: writes a function and its tests from requirements. Writing is a side effect, so
 * it first submits a plan and writes nothing until the plan is approved. The code comes from
 * templates (deterministic, no network); "writing" puts the files into the agent's workspace
 * in memory.
 */
import { createAgent, type Agent, type TaskContext } from '../../agent/index.ts';
import type { Analysis } from './analyst.ts';
import { capability, demoCard, isMain, serveStdio } from './common.ts';

/** A file the coder wrote. */
export interface SourceFile {
  path: string;
  content: string;
}

/** The output of code.generate. */
export interface Generated {
  files: SourceFile[];
  plan_id: string;
}

const TEMPLATES: Record<string, (a: Analysis) => SourceFile[]> = {
  slugify: (a) => [
    {
      path: 'src/slugify.ts',
      content: [
        `/** ${a.requirements.map((r) => `${r.id}: ${r.text}`).join('; ')}. */`,
        `${a.signature} {`,
        '  return title',
        '    .toLowerCase()',
        "    .replace(/[^a-z0-9]+/g, '-')",
        "    .replace(/^-+|-+$/g, '');",
        '}',
        '',
      ].join('\n'),
    },
    {
      path: 'test/slugify.test.ts',
      content: [
        "import { expect, it } from 'vitest';",
        "import { slugify } from '../src/slugify.ts';",
        '',
        ...a.acceptance.map(
          (c) =>
            `it(${JSON.stringify(`slugifies ${c.input}`)}, () => expect(slugify(${JSON.stringify(c.input)})).toBe(${JSON.stringify(c.expected)}));`,
        ),
        '',
      ].join('\n'),
    },
  ],
};

/** The files written so far, by path: the coder's workspace. */
export const workspace = new Map<string, string>();

/** code.generate: plan, wait for approval, then write the files. */
export async function generate(input: { analysis: Analysis }, ctx: TaskContext): Promise<Generated> {
  const { analysis } = input;
  const template = TEMPLATES[analysis.name];
  if (!template) throw new Error(`no template for ${analysis.name}; this coder writes: ${Object.keys(TEMPLATES).join(', ')}`);
  const files = template(analysis);
  ctx.progress({ stage: 'planning', message: `${files.length} files for ${analysis.requirements.length} requirements` });
  const decision = await ctx.submitPlan({
    intent: `Write ${analysis.name} and its tests`,
    steps: files.map((f) => ({
      action: 'write',
      target: f.path,
      expected_output: `${f.content.split('\n').length} lines`,
      reversible: true,
    })),
    rollback: `Delete ${files.map((f) => f.path).join(' and ')}`,
    estimated_cost: { tokens: 0, seconds: 1 },
    risk_level: 'low',
  });
  ctx.checkpoint({ plan_id: decision.plan_id, written: [] }, { completed: [], remaining: files.map((f) => `write ${f.path}`) });
  for (const [i, f] of files.entries()) {
    await ctx.sideEffect(() => workspace.set(f.path, f.content));
    ctx.output({ step: i, action: 'write', path: f.path, bytes: Buffer.byteLength(f.content) });
    ctx.checkpoint(
      { plan_id: decision.plan_id, written: files.slice(0, i + 1).map((x) => x.path) },
      { completed: files.slice(0, i + 1).map((x) => `write ${x.path}`), remaining: files.slice(i + 1).map((x) => `write ${x.path}`) },
    );
  }
  return { files, plan_id: decision.plan_id };
}

/** The coder agent. */
export function createCoder(): Agent {
  return createAgent({
    card: demoCard(
      'coder',
      'Coder',
      'Writes small TypeScript functions and their tests from numbered requirements, after its plan is approved. ' +
        'Good at pure functions it has templates for; not good at anything else, and it never writes without approval.',
      [
        capability('code.generate', 'Writes the code for { analysis }; submits a plan and waits for approval first.', {
          side_effects: true,
        }),
      ],
    ),
    capabilities: { 'code.generate': generate },
  });
}

if (isMain(import.meta.url)) await serveStdio(createCoder());
