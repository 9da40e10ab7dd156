/** tapctl workspace reap: returns claims whose lease expired, judged by this process's own observation. */
import { Reaper, openWorkspace, type ReapAction } from '../../workspace/index.ts';
import type { Command, CommandContext } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { duration, printJson } from './format.ts';

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/** One reap action as a line for people. */
export function actionLine(a: ReapAction, maxAttempts: number): string {
  const who = a.holder ? ` (held by ${a.holder})` : '';
  switch (a.action) {
    case 'requeued':
      return `returned ${a.task_id} to pending/: claim ${a.epoch}${who} expired; attempt ${a.attempts} of ${maxAttempts} used`;
    case 'dead-lettered':
      return `moved ${a.task_id} to failed/ as a dead letter: claim ${a.epoch}${who} expired after ${a.attempts} attempts (MAX_ATTEMPTS)`;
    case 'rejected':
      return `moved ${a.task_id} to failed/: its claimed file is not a valid record`;
    case 'returned':
      return `returned ${a.task_id} to pending/ unchanged: claim ${a.epoch} was made on a newer record than its claimant read`;
    case 'recovered':
      return `finished the transition of ${a.task_id} @${a.epoch} that its actor had committed but not published`;
    case 'removed':
      return `removed leftover ${a.file}`;
  }
}

export const reapCommand: Command = {
  name: 'reap',
  summary: 'return claims whose lease expired to pending/ (or to failed/ after max_attempts)',
  help: `Usage: tapctl workspace reap <dir> [--watch] [--json]

Watches tasks/processing/ and returns every claim whose lease file this process has seen
unchanged for lease_ms to pending/ with attempts + 1, or to failed/ with MAX_ATTEMPTS once
attempts reach max_attempts. It also finishes transitions whose actor stopped half-way and
removes leftovers. It never trusts times written by other hosts, so it must watch for at least
lease_ms before it can reap anything: without --watch it watches for lease_ms and a little
more, then reports and exits.

Options:
  --watch   keep reaping until interrupted
  --json    print the actions as JSON (with --watch, one JSON object per line)
`,
  async run(args, ctx: CommandContext) {
    const { values, positionals: given } = parseOptions(args, { json: { type: 'boolean' }, watch: { type: 'boolean' } });
    const [dir] = positionals(given, ['dir']);
    const ws = await openWorkspace(dir!);
    const reaper = new Reaper(ws, { actor: 'tapctl' });
    const lease = ws.config.lease_ms;
    const step = Math.max(10, Math.floor(lease / 4));
    const show = (a: ReapAction) => ctx.io.out((values.json ? JSON.stringify(a) : actionLine(a, ws.config.max_attempts)) + '\n');
    if (values.watch) {
      if (!values.json) ctx.io.err(`Reaping ${ws.root} (lease ${duration(lease)}); Ctrl-C to stop\n`);
      while (!ctx.signal.aborted) {
        for (const a of await reaper.pass()) show(a);
        await sleep(step, ctx.signal);
      }
      return 0;
    }
    if (!values.json) ctx.io.err(`Watching the claims of ${ws.root} for ${duration(lease + step)} (the lease is ${duration(lease)})…\n`);
    const actions: ReapAction[] = [];
    const end = performance.now() + lease + step;
    for (;;) {
      actions.push(...(await reaper.pass()));
      if (performance.now() >= end || ctx.signal.aborted) break;
      await sleep(Math.min(step, Math.max(1, end - performance.now())), ctx.signal);
    }
    if (values.json) {
      printJson(ctx.io, { workspace: ws.root, observed_ms: lease + step, actions });
      return 0;
    }
    if (actions.length === 0) ctx.io.out('Nothing to reap: every claim renewed its lease while watched.\n');
    for (const a of actions) show(a);
    return 0;
  },
};
