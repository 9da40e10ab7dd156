/** tapctl workspace status: counts per state, stuck claims, dead letters, agents and their heartbeats. */
import { openWorkspace, workspaceStatus } from '../../workspace/index.ts';
import type { Command } from '../registry.ts';
import { parseOptions, positionals } from '../cli.ts';
import { duration, excerpt, printJson, table } from './format.ts';

export const statusCommand: Command = {
  name: 'status',
  summary: 'show counts per state, stuck claims, dead letters and agents',
  help: `Usage: tapctl workspace status <dir> [--json]

Shows how many tasks each directory holds, the claims in tasks/processing/ with their holders
and how long ago their leases were renewed, claims past their lease, the tasks waiting in
tasks/awaiting/ for a plan decision (and decision files that cannot be acted on), dead letters
(failed with MAX_ATTEMPTS), other failed tasks, and the agents with their phases and last heartbeat.

Ages come from file times and this host's clock: they are estimates. The reaper never decides
by them; it returns a claim only after it has itself seen the lease unchanged for lease_ms.

Options:
  --json   print the status as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, { json: { type: 'boolean' } });
    const [dir] = positionals(given, ['dir']);
    const ws = await openWorkspace(dir!);
    const s = await workspaceStatus(ws);
    if (values.json) {
      printJson(ctx.io, s);
      return 0;
    }
    const c = s.config;
    let text = `Workspace ${s.workspace}\n  ${c.protocol}, claim mode ${c.claim_mode}, lease ${duration(c.lease_ms)}, max attempts ${c.max_attempts}, history limit ${c.history_limit}\n\n`;
    text += 'Tasks\n';
    text += table([
      ['pending', String(s.counts.pending)],
      ['processing', String(s.counts.processing) + (s.stuck.length > 0 ? `  (${s.stuck.length} past their lease)` : '')],
      ['awaiting', String(s.counts.awaiting)],
      ['completed', String(s.counts.completed)],
      [
        'failed',
        String(s.counts.failed) +
          (s.dead_letters.length > 0 ? `  (${s.dead_letters.length} dead letter${s.dead_letters.length === 1 ? '' : 's'})` : ''),
      ],
    ]);
    if (s.claims.length > 0) {
      text += '\nClaims\n';
      text += table(
        s.claims.map((cl) => [
          `${cl.task_id} @${cl.epoch}`,
          cl.phase ?? '?',
          cl.holder ? `held by ${cl.holder}` : 'no lease yet',
          cl.lease_age_ms === null
            ? ''
            : cl.past_lease
              ? `not renewed for ${duration(cl.lease_age_ms)}: past its lease, the reaper will return it`
              : `renewed ${duration(cl.lease_age_ms)} ago`,
        ]),
      );
    }
    if (s.in_transition.length > 0) text += `\nIn transition (committed, not yet published): ${s.in_transition.join(', ')}\n`;
    if (s.awaiting.length > 0) {
      const said: Record<string, string> = { waiting: 'waiting for a decision', decided: 'decided; an agent will claim it' };
      text += '\nAwaiting approval\n';
      text += table(
        s.awaiting.map((a) => [
          a.task_id,
          a.phase ?? '?',
          a.plan_id ? `plan ${a.plan_id}` : 'no plan',
          said[a.state] ?? `${a.state}: ${excerpt(a.problem ?? '', 120)}`,
        ]),
      );
    }
    if (s.dead_letters.length > 0) {
      text += '\nDead letters\n';
      text += table(s.dead_letters.map((d) => [d.task_id, d.phase ?? '-', excerpt(d.message ?? '', 100)]));
    }
    if (s.failed.length > 0) {
      text += '\nFailed\n';
      text += table(s.failed.map((d) => [d.task_id, d.status, d.code ?? '-', excerpt(d.message ?? '', 80)]));
    }
    text += '\nAgents\n';
    text +=
      s.agents.length === 0
        ? '  none has joined yet\n'
        : table(
            s.agents.map((a) => [
              a.agent_id,
              a.state?.status ?? '?',
              `phases ${a.state?.phases.join(', ') || '-'}`,
              a.heartbeat_age_ms === null ? 'no heartbeat' : `heartbeat ${duration(a.heartbeat_age_ms)} ago`,
            ]),
          );
    if (s.ignored_files.length > 0) text += `\nIgnored files (names the binding does not define): ${s.ignored_files.join(', ')}\n`;
    ctx.io.out(text);
    return 0;
  },
};
