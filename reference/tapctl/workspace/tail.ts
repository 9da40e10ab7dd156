/** tapctl workspace tail: live events, like `tail -f`, until interrupted. */
import { openWorkspace, watchWorkspace, type WorkspaceEvent } from '../../workspace/index.ts';
import type { Command } from '../registry.ts';
import { intOption, parseOptions, positionals } from '../cli.ts';
import { excerpt } from './format.ts';

/** One event as a line for people. */
export function eventLine(e: WorkspaceEvent): string {
  const time = e.at.slice(11, 23);
  switch (e.kind) {
    case 'queued':
      return `${time}  queued     ${e.task_id} for phase ${e.phase ?? '?'}${e.target_agent ? ` (for ${e.target_agent})` : ''}${e.attempts > 0 ? `, after ${e.attempts} unfinished claim${e.attempts === 1 ? '' : 's'}` : ''}`;
    case 'claimed':
      return `${time}  claimed    ${e.task_id} @${e.epoch}, phase ${e.phase ?? '?'}${e.holder ? ` by ${e.holder}` : ''}`;
    case 'completed':
      return `${time}  completed  ${e.task_id}${e.by ? ` (last phase by ${e.by})` : ''}`;
    case 'failed':
      return `${time}  ${e.dead_letter ? 'dead letter' : e.status.padEnd(10)} ${e.task_id}: ${e.code ?? ''} ${excerpt(e.message ?? '', 120)}`;
    case 'agent':
      return `${time}  agent      ${e.agent_id} is ${e.status}${e.phases.length > 0 ? ` (phases ${e.phases.join(', ')})` : ''}`;
  }
}

export const tailCommand: Command = {
  name: 'tail',
  summary: 'print live events (tasks queued, claimed, finished; agents) until interrupted',
  help: `Usage: tapctl workspace tail <dir> [options]

Prints what happens in the workspace as it happens: tasks queued, claimed, completed, failed
and dead-lettered, agents starting and stopping. Stops on Ctrl-C.

Options:
  --from-start     first print what is already there, as events
  --interval-ms N  time between looks at the workspace (default 250)
  --json           print one JSON object per line
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      json: { type: 'boolean' },
      'from-start': { type: 'boolean' },
      'interval-ms': { type: 'string' },
    });
    const [dir] = positionals(given, ['dir']);
    const ws = await openWorkspace(dir!);
    if (!values.json) ctx.io.err(`Watching ${ws.root} (Ctrl-C to stop)\n`);
    await watchWorkspace(ws, {
      signal: ctx.signal,
      fromStart: values['from-start'] ?? false,
      intervalMs: intOption(values['interval-ms'], 'interval-ms', 10),
      onEvent: (e) => ctx.io.out((values.json ? JSON.stringify(e) : eventLine(e)) + '\n'),
    });
    return 0;
  },
};
