/**
 * The reviewer: checks code against requirements (code.review) and lints it slowly, line by
 * line (code.lint, optional and cancellable). Both are deterministic and need no network.
 */
import { createAgent, type Agent, type TaskContext } from '../../agent/index.ts';
import type { Requirement } from './analyst.ts';
import type { SourceFile } from './coder.ts';
import { capability, demoCard, isMain, serveStdio } from './common.ts';

/** The output of code.review. */
export interface Review {
  verdict: 'approved' | 'changes_requested';
  findings: Array<{ requirement: string; met: boolean; evidence: string }>;
}

/** code.review: every requirement's keywords must appear in the code. */
export async function review(input: { files: SourceFile[]; requirements: Requirement[] }, ctx: TaskContext): Promise<Review> {
  const code = input.files.map((f) => f.content).join('\n');
  const findings: Review['findings'] = [];
  for (const [i, r] of input.requirements.entries()) {
    const missing = r.keywords.filter((k) => !code.includes(k));
    findings.push({
      requirement: r.id,
      met: missing.length === 0,
      evidence:
        missing.length === 0
          ? r.keywords.length
            ? `found ${r.keywords.join(', ')}`
            : 'nothing specific to check'
          : `missing ${missing.join(', ')}`,
    });
    ctx.progress({
      percent: Math.round(((i + 1) / input.requirements.length) * 100),
      stage: 'reviewing',
      message: `${r.id} ${findings.at(-1)!.met ? 'met' : 'not met'}`,
    });
    await ctx.sleep(10);
  }
  return { verdict: findings.every((f) => f.met) ? 'approved' : 'changes_requested', findings };
}

/** How long code.lint spends on each line, in ms. */
export const LINT_MS_PER_LINE = 250;

/** code.lint: a slow, optional style pass; honours cancel between lines. */
export async function lint(input: { files: SourceFile[] }, ctx: TaskContext): Promise<{ warnings: string[] }> {
  const lines = input.files.flatMap((f) => f.content.split('\n').map((text, i) => ({ path: f.path, line: i + 1, text })));
  const warnings: string[] = [];
  for (const [i, l] of lines.entries()) {
    ctx.checkpoint(
      { linted: i },
      { completed: [`${i} lines`], remaining: [`${lines.length - i} lines`], resume_hint: `Lint from line ${i + 1}.` },
    );
    ctx.progress({ percent: Math.round((i / lines.length) * 100), stage: 'linting', message: `${l.path}:${l.line}` });
    if (l.text.length > 100) warnings.push(`${l.path}:${l.line} is longer than 100 characters`);
    await ctx.sleep(LINT_MS_PER_LINE);
  }
  return { warnings };
}

/** The reviewer agent. */
export function createReviewer(): Agent {
  return createAgent({
    card: demoCard(
      'reviewer',
      'Reviewer',
      'Checks code against numbered requirements and lints it. Good at traceable, requirement-by-requirement ' +
        'reviews; not good at judging design or performance, and its lint is slow.',
      [
        capability('code.review', 'Checks { files, requirements }: each requirement met or not, with evidence.'),
        capability('code.lint', 'Lints { files } line by line; slow and optional, cancel it when it is no longer needed.'),
      ],
    ),
    capabilities: { 'code.review': review, 'code.lint': lint },
  });
}

if (isMain(import.meta.url)) await serveStdio(createReviewer());
