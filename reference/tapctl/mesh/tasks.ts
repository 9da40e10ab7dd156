/** tapctl mesh tasks: every task the trace records show, one line per attempt, with its hop and ending (spec: mesh#moving). */
import { traces } from '../../mesh/trace-view.ts';
import { parseOptions, positionals } from '../cli.ts';
import type { Command } from '../registry.ts';
import { duration, printJson, table } from '../workspace/format.ts';
import { LOGS_HELP, loadRecords } from './logs.ts';
import { textOrder } from '../../core/text-order.ts';

export const tasksCommand: Command = {
  name: 'tasks',
  summary: 'list the tasks of the mesh with their agent, attempt and ending',
  help: `Usage: tapctl mesh tasks [--logs PATH] [--agent ID] [--open] [--json]

Lists every task.request the trace records show: its trace, the requester and the agent it went
to, its task id, its metadata.attempt (a moved task shows one line per agent, the attempts in
order) and how it ended, or that it has no ending yet.

Options:
${LOGS_HELP}
  --agent ID    only tasks sent to or by this agent
  --open        only tasks with no ending recorded
  --json        print the tasks as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      logs: { type: 'string' },
      agent: { type: 'string' },
      open: { type: 'boolean' },
      json: { type: 'boolean' },
    });
    positionals(given, []);
    const rows = [];
    for (const view of traces(loadRecords(values.logs, ctx)).values()) {
      for (const s of view.spans) {
        if (values.agent !== undefined && s.peer !== values.agent && s.node !== values.agent) continue;
        if (values.open && s.end) continue;
        rows.push({ trace_id: view.trace_id, ...s });
      }
    }
    rows.sort((a, b) => textOrder(a.sent, b.sent));
    if (values.json) {
      printJson(ctx.io, rows);
      return 0;
    }
    if (rows.length === 0) {
      ctx.io.out('no tasks in the trace records\n');
      return 0;
    }
    ctx.io.out(
      table([
        ['SENT', 'TRACE', 'FROM', 'TO', 'TASK', 'ATTEMPT', 'ENDING'],
        ...rows.map((r) => [
          r.sent,
          r.trace_id.slice(0, 12),
          r.node,
          r.peer ?? '?',
          r.task_id ?? '?',
          String(r.attempt ?? 1),
          r.end
            ? `${r.end.status ?? r.end.type}${r.end.code ? ` ${r.end.code}` : ''}${r.end.duration_ms !== undefined ? ` (${duration(r.end.duration_ms)})` : ''}`
            : 'open',
        ]),
      ]),
    );
    return 0;
  },
};
