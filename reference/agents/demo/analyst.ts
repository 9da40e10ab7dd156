/**
 * The analyst: turns a short brief into numbered requirements and acceptance checks. Its
 * handler is deterministic (the same brief gives the same requirements) and needs no network.
 */
import { createAgent, type Agent, type TaskContext } from '../../agent/index.ts';
import { capability, demoCard, isMain, serveStdio } from './common.ts';

/** The input of requirements.analyse. */
export interface AnalyseInput {
  /** The function to specify, e.g. "slugify". */
  name: string;
  /** What it should do, in one or more sentences. */
  brief: string;
}

/** One requirement with the keywords a review looks for. */
export interface Requirement {
  id: string;
  text: string;
  keywords: string[];
}

/** The output of requirements.analyse. */
export interface Analysis {
  name: string;
  signature: string;
  requirements: Requirement[];
  acceptance: Array<{ input: string; expected: string }>;
}

/** Words that say what a clause is about, mapped to what the code must contain. */
const KEYWORDS: Array<[RegExp, string[]]> = [
  [/lower ?case/i, ['toLowerCase']],
  [/replace|non-alphanumeric|dash/i, ['replace', '[^a-z0-9]+']],
  [/trim/i, ['^-+|-+$']],
  [/empty/i, ['return']],
];

/** Splits a brief into clauses: sentences, then ", " and " and " lists. */
export function clauses(brief: string): string[] {
  return brief
    .split(/(?<=[.;])\s+/)
    .flatMap((s) => s.split(/,\s*(?:and\s+)?/))
    .map((s) => s.replace(/[.;]$/, '').trim())
    .filter((s) => s.length > 0);
}

/** requirements.analyse: a brief in, requirements and acceptance checks out. */
export async function analyse(input: AnalyseInput, ctx: TaskContext): Promise<Analysis> {
  const parts = clauses(input.brief);
  const requirements: Requirement[] = [];
  for (const [i, text] of parts.entries()) {
    ctx.progress({ percent: Math.round(((i + 1) / parts.length) * 100), stage: 'reading the brief', message: text });
    const keywords = KEYWORDS.filter(([re]) => re.test(text)).flatMap(([, k]) => k);
    requirements.push({ id: `R${i + 1}`, text, keywords });
    await ctx.sleep(20);
  }
  ctx.log(`${requirements.length} requirements for ${input.name}`);
  return {
    name: input.name,
    signature: `export function ${input.name}(title: string): string`,
    requirements,
    acceptance: [
      { input: 'Hello, World!', expected: 'hello-world' },
      { input: '  TAP 1.0 -- hand-offs  ', expected: 'tap-1-0-hand-offs' },
      { input: '***', expected: '' },
    ],
  };
}

/** The analyst agent. */
export function createAnalyst(): Agent {
  return createAgent({
    card: demoCard(
      'analyst',
      'Requirements analyst',
      'Turns a short brief into numbered, testable requirements and acceptance checks. Good at small, ' +
        'well-scoped functions; not good at architecture, estimates, or anything it would have to look up.',
      [capability('requirements.analyse', 'Reads a brief { name, brief } and returns requirements and acceptance checks.')],
    ),
    capabilities: { 'requirements.analyse': analyse },
  });
}

if (isMain(import.meta.url)) await serveStdio(createAnalyst());
