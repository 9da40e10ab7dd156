/**
 * The demo pipeline, driven by a coordinator that holds one client per agent:
 * analyse → plan (approved) → write code → review, with an optional lint that is cancelled
 * once the review has passed.
 */
import type { PlanSubmitPayload, ResultPayload, TapClient } from '../../client/index.ts';
import type { Analysis } from './analyst.ts';
import type { Generated } from './coder.ts';
import type { Review } from './reviewer.ts';

/** The three sessions the coordinator holds. */
export interface Peers {
  analyst: TapClient;
  coder: TapClient;
  reviewer: TapClient;
}

/** What the pipeline produced. */
export interface PipelineReport {
  analysis: Analysis;
  plan: PlanSubmitPayload['plan'];
  generated: Generated;
  review: Review;
  lint: ResultPayload;
}

/** The brief the demo starts from. */
export const BRIEF = {
  name: 'slugify',
  brief:
    'Write a function slugify(title) that lowercases the title, replaces runs of non-alphanumeric characters ' +
    'with a single dash, and trims dashes at both ends. It returns an empty string when nothing is left.',
};

/** Runs the pipeline; `say` narrates the coordinator's decisions. */
export async function runPipeline(peers: Peers, say: (text: string) => void): Promise<PipelineReport> {
  say('1. the analyst turns the brief into requirements');
  const analysed = await peers.analyst.submit('requirements.analyse', BRIEF).result;
  if (analysed.status !== 'completed') throw new Error(`the analysis ended ${analysed.status}: ${analysed.error?.message ?? ''}`);
  const analysis = analysed.output as Analysis;

  say('2. the coder plans the code; the coordinator approves the plan before anything is written');
  let plan: PlanSubmitPayload['plan'] | undefined;
  const coding = peers.coder.submit(
    'code.generate',
    { analysis },
    {
      onPlan: (submitted) => {
        plan = submitted.plan;
        const writesOnly = submitted.plan.steps.every((s) => s.action === 'write' && s.reversible);
        say(
          `   plan ${submitted.plan.plan_id}: ${submitted.plan.steps.length} reversible writes, risk ${submitted.plan.risk_level} → ${writesOnly ? 'approve' : 'reject'}`,
        );
        return writesOnly
          ? { decision: 'approved', feedback: 'reversible writes only: go ahead' }
          : { decision: 'rejected', feedback: 'only reversible writes are allowed' };
      },
    },
  );
  const coded = await coding.result;
  if (coded.status !== 'completed' || !plan) throw new Error(`code generation ended ${coded.status}: ${coded.error?.message ?? ''}`);
  const generated = coded.output as Generated;

  say('3. the reviewer reviews the code; a slow optional lint runs alongside');
  const lint = peers.reviewer.submit('code.lint', { files: generated.files });
  const linting = (async () => {
    for await (const e of lint.events) if (e.payload.kind === 'progress') return;
  })();
  const reviewed = await peers.reviewer.submit('code.review', { files: generated.files, requirements: analysis.requirements }).result;
  if (reviewed.status !== 'completed') throw new Error(`the review ended ${reviewed.status}: ${reviewed.error?.message ?? ''}`);
  const review = reviewed.output as Review;
  await linting;

  say(`4. the review says ${review.verdict}; the lint is no longer needed, so the coordinator cancels it`);
  await lint.cancel(`the review says ${review.verdict}; the lint is optional`);
  const linted = await lint.result;
  return { analysis, plan, generated, review, lint: linted };
}
