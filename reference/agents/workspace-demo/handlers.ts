/**
 * The three phases of the workspace demo — requirement analysis, code generation, code review —
 * as deterministic handlers: the same brief always gives the same requirements, code and review,
 * with no model and no network. Each phase leaves its work as an artifact for the next.
 */
import { TapError } from '../../core/errors.ts';
import type { PhaseContext, PhaseOutcome } from '../../workspace/phase.ts';

/** The phases, in order; a task's `metadata.pipeline`. */
export const PIPELINE = ['requirements', 'codegen', 'review'] as const;

/** What the demo asks for. */
export interface Brief {
  /** The function to write, e.g. "slugify". */
  name: string;
  /** What it should do, in sentences; examples as "input" → "output" pairs. */
  brief: string;
}

/** The brief of the demo task. */
export const DEMO_BRIEF: Brief = {
  name: 'slugify',
  brief:
    'Write a function slugify(text) that turns a title into a URL slug. ' +
    'It lowercases the text. ' +
    'It replaces every run of characters other than letters and digits with one hyphen. ' +
    'It trims hyphens from both ends. ' +
    'Examples: "Hello, World!" → "hello-world"; "  TAP over files  " → "tap-over-files"; "Déjà vu" → "d-j-vu".',
};

/** One numbered requirement. */
export interface Requirement {
  id: string;
  text: string;
}

/** The output of the requirements phase. */
export interface Analysis {
  name: string;
  requirements: Requirement[];
  acceptance: Array<{ input: string; expected: string }>;
}

/** The output of the codegen phase. */
export interface Generated {
  name: string;
  file: string;
  covers: string[];
  acceptance: Analysis['acceptance'];
}

/** Requirement analysis: one requirement per sentence of behaviour, acceptance checks from the examples. */
export async function analyse(ctx: PhaseContext): Promise<PhaseOutcome> {
  const input = ctx.input as Partial<Brief> | null;
  if (!input || typeof input.name !== 'string' || typeof input.brief !== 'string') {
    throw new TapError('INVALID_MESSAGE', 'the requirements phase needs an input { name, brief }');
  }
  const [prose = '', examples = ''] = input.brief.split(/Examples?:/);
  const sentences = prose
    .split(/(?<=\.)\s+/)
    .map((s) => s.trim())
    .filter((s) => /^It /.test(s));
  const requirements = sentences.map((text, i) => ({ id: `R${i + 1}`, text }));
  const acceptance = [...examples.matchAll(/"([^"]*)"\s*→\s*"([^"]*)"/g)].map((m) => ({ input: m[1]!, expected: m[2]! }));
  const doc = [
    `# ${input.name}: requirements`,
    '',
    ...requirements.map((r) => `- ${r.id}: ${r.text}`),
    '',
    '## Acceptance',
    '',
    ...acceptance.map((a) => `- ${JSON.stringify(a.input)} → ${JSON.stringify(a.expected)}`),
    '',
  ];
  await ctx.writeArtifact('requirements.md', doc.join('\n'));
  const analysis: Analysis = { name: input.name, requirements, acceptance };
  return { output: analysis };
}

/** The code each kind of requirement asks for, recognised by a keyword. */
const STEPS: Array<{ keyword: RegExp; code: string }> = [
  { keyword: /lowercase/i, code: '.toLowerCase()' },
  { keyword: /replaces? every run/i, code: ".replace(/[^a-z0-9]+/g, '-')" },
  { keyword: /trims? hyphens/i, code: ".replace(/^-+|-+$/g, '')" },
];

/** Code generation: one chained step per recognised requirement, written as a JavaScript module. */
export async function generate(ctx: PhaseContext): Promise<PhaseOutcome> {
  const analysis = ctx.input as Analysis;
  const covers: string[] = [];
  const chain: string[] = [];
  for (const step of STEPS) {
    const req = analysis.requirements.find((r) => step.keyword.test(r.text));
    if (!req) continue;
    covers.push(req.id);
    chain.push(`    ${step.code} // ${req.id}`);
  }
  const source = [
    `/** Generated from the requirements of ${ctx.taskId}. */`,
    `function ${analysis.name}(text) {`,
    '  return String(text)',
    ...chain,
    '  ;',
    '}',
    '',
  ].join('\n');
  const file = await ctx.writeArtifact(`${analysis.name}.js`, source);
  const generated: Generated = { name: analysis.name, file, covers, acceptance: analysis.acceptance };
  return { output: generated };
}

/** Code review: runs the acceptance checks against the generated code and checks every requirement is covered. */
export async function review(ctx: PhaseContext): Promise<PhaseOutcome> {
  const generated = ctx.input as Generated;
  const source = (await ctx.readArtifact(generated.file)).toString('utf8');
  const fn = new Function(`${source}\nreturn ${generated.name};`)() as (text: string) => string;
  const checks = generated.acceptance.map((a) => {
    const actual = fn(a.input);
    return { input: a.input, expected: a.expected, actual, pass: actual === a.expected };
  });
  const history = await ctx.history();
  const analysis = history.find((h) => h.phase === 'requirements')?.output as Analysis | undefined;
  const uncovered = (analysis?.requirements ?? []).map((r) => r.id).filter((id) => !generated.covers.includes(id));
  const approved = checks.every((c) => c.pass) && uncovered.length === 0;
  const notes = [
    `# Review of ${generated.file}`,
    '',
    ...checks.map(
      (c) =>
        `- ${c.pass ? 'pass' : 'FAIL'}: ${JSON.stringify(c.input)} → ${JSON.stringify(c.actual)} (expected ${JSON.stringify(c.expected)})`,
    ),
    uncovered.length > 0 ? `- requirements not covered: ${uncovered.join(', ')}` : '- every requirement is covered',
    '',
    `Verdict: ${approved ? 'approved' : 'changes requested'}`,
    '',
  ];
  await ctx.writeArtifact('review.md', notes.join('\n'));
  return {
    output: {
      verdict: approved ? 'approved' : 'changes requested',
      checks: checks.length,
      passed: checks.filter((c) => c.pass).length,
      uncovered,
    },
  };
}

/** The demo's agents: who serves which phase. */
export const ROLES = {
  analyst: {
    agentId: 'analyst',
    phase: 'requirements',
    handler: analyse,
    name: 'Requirement analyst',
    description: 'Turns a short brief into numbered requirements and acceptance checks. Writes no code.',
  },
  coder: {
    agentId: 'coder',
    phase: 'codegen',
    handler: generate,
    name: 'Code generator',
    description: 'Writes a JavaScript function from numbered requirements. Does not review its own work.',
  },
  reviewer: {
    agentId: 'reviewer',
    phase: 'review',
    handler: review,
    name: 'Code reviewer',
    description: 'Runs the acceptance checks against generated code and checks every requirement is covered. Does not fix code.',
  },
} as const;
export type Role = keyof typeof ROLES;
