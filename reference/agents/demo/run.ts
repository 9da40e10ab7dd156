/**
 * The TAP demo: a coordinator spawns three agents (analyst, coder, reviewer) over stdio and
 * drives analyse → plan approval → write code → review, cancelling an optional lint on the
 * way. It prints one line per message and writes the whole wire transcript as NDJSON.
 *
 *   npx tsx reference/agents/demo/run.ts [--transcript PATH] [--quiet] [--agent-logs]
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { TapMessage } from '../../../schemas/src/index.ts';
import { connect, type TapClient } from '../../client/index.ts';
import { describeExit, spawnStdioTransport, type ChildStdioTransport } from '../../transports/index.ts';
import { line } from './format.ts';
import { runPipeline, type Peers } from './pipeline.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const COORDINATOR = 'coordinator';
const AGENTS = {
  analyst: { file: 'analyst.ts', requires: ['requirements.analyse'] },
  coder: { file: 'coder.ts', requires: ['code.generate'] },
  reviewer: { file: 'reviewer.ts', requires: ['code.review', 'code.lint'] },
} as const;

/** One transcript line, as the golden transcripts under fixtures/ write them. */
interface TranscriptLine {
  dir: 'requester->agent' | 'agent->requester';
  message: TapMessage;
}

const USAGE = `Usage: npx tsx reference/agents/demo/run.ts [options]

Runs the TAP demo: a coordinator and three agents (analyst, coder, reviewer) over stdio.

Options:
  --transcript PATH   where to write the wire transcript (NDJSON, one {dir, message} per line);
                      default: demo-transcript.ndjson in a new temporary directory
  --quiet             print only the summary
  --agent-logs        show the agents' stderr
  -h, --help          show this help
`;

function options(): { transcript: string; quiet: boolean; agentLogs: boolean } {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        transcript: { type: 'string' },
        quiet: { type: 'boolean', default: false },
        'agent-logs': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`demo: ${(err as Error).message}\nRun with --help for usage.\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const transcript = values.transcript
    ? resolve(values.transcript)
    : join(mkdtempSync(join(tmpdir(), 'tap-demo-')), 'demo-transcript.ndjson');
  return { transcript, quiet: values.quiet === true, agentLogs: values['agent-logs'] === true };
}

async function main(): Promise<void> {
  const opts = options();
  const started = Date.now();
  const out = (text: string): void => void (opts.quiet || process.stdout.write(`${text}\n`));
  const stamp = (): string => `+${((Date.now() - started) / 1000).toFixed(3)}s`.padStart(9);
  const transcript: TranscriptLine[] = [];
  const save = (): void => writeFileSync(opts.transcript, transcript.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const loader = import.meta.resolve('tsx');

  const children: ChildStdioTransport[] = [];
  const clients: Partial<Record<keyof typeof AGENTS, TapClient>> = {};
  try {
    out('TAP demo: a coordinator, an analyst, a coder and a reviewer, each agent its own process over stdio\n');
    // The three agents start in parallel; each gets its own session.
    await Promise.all(
      (Object.entries(AGENTS) as [keyof typeof AGENTS, (typeof AGENTS)[keyof typeof AGENTS]][]).map(async ([name, spec]) => {
        const child = spawnStdioTransport(process.execPath, ['--import', loader, join(HERE, spec.file)], {
          stderr: (text) => void (opts.agentLogs && process.stderr.write(`[${name}] ${text}\n`)),
          closeGraceMs: 5000,
        });
        children.push(child);
        clients[name] = await connect(child, {
          agentId: COORDINATOR,
          target: name,
          requires: [...spec.requires],
          // A freshly spawned agent needs a moment to start before it can answer.
          handshakeTimeoutMs: 60_000,
          trace: (e) => {
            const message = JSON.parse(e.text) as TapMessage;
            const outbound = e.dir === 'out';
            transcript.push({ dir: outbound ? 'requester->agent' : 'agent->requester', message });
            out(`${stamp()}  ${outbound ? line(message, COORDINATOR, name) : line(message, name, COORDINATOR)}`);
          },
        });
      }),
    );
    const report = await runPipeline(clients as Peers, (text) => out(`\n${text}`));
    out('\nthe coordinator says farewell to each agent');
    for (const name of Object.keys(AGENTS) as (keyof typeof AGENTS)[]) await clients[name]!.close('the pipeline is done');
    const exits = await Promise.all(children.map((c) => c.exited));
    save();

    const summary = [
      '',
      'Summary',
      `  requirements   ${report.analysis.requirements.map((r) => `${r.id} ${r.text}`).join('\n                 ')}`,
      `  plan           ${report.plan.plan_id} approved before any file was written`,
      `  code           ${report.generated.files.map((f) => f.path).join(', ')}`,
      `  review         ${report.review.verdict} (${report.review.findings.filter((f) => f.met).length}/${report.review.findings.length} requirements met)`,
      `  lint           ${report.lint.status}`,
      `  agents         ${children.map((c, i) => `${basename(c.args[c.args.length - 1]!, '.ts')} ${describeExit(exits[i]!)}`).join(', ')}`,
      `  transcript     ${opts.transcript} (${transcript.length} messages)`,
    ];
    process.stdout.write(summary.join('\n') + '\n');
  } catch (err) {
    save();
    process.stderr.write(`demo failed: ${(err as Error).message}\nThe transcript so far is in ${opts.transcript}\n`);
    for (const c of Object.values(clients)) await c.close('the demo failed').catch(() => {});
    for (const c of children) c.kill('SIGKILL');
    process.exitCode = 1;
  }
}

await main();
