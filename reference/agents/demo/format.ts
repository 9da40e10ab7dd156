/** One readable line per TAP message, for the demo's terminal output. */
import type { TapMessage } from '../../../schemas/src/index.ts';

const short = (id: string | undefined): string => (id === undefined ? '' : id.length > 14 ? `${id.slice(0, 14)}…` : id);

const clip = (text: string, n = 60): string => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

/** What a message says, in a few words: "task.request requirements.analyse", "progress 50% reading the brief". */
export function describe(msg: TapMessage): string {
  const p = msg.payload as Record<string, any>;
  switch (msg.type) {
    case 'handshake.init':
      return `versions ${p.versions.join(', ')}; requires ${p.requires.join(', ') || 'nothing'}`;
    case 'handshake.ack':
      return `session ${short(p.session_id)}; granted ${p.granted.join(', ') || 'nothing'}; heartbeat ${p.params.heartbeat_ms} ms`;
    case 'handshake.ready':
      return 'params confirmed';
    case 'handshake.go':
      return 'session established';
    case 'task.request':
      return `${p.capability} [${msg.task_id}]`;
    case 'task.accepted':
      return `${p.capability} [${msg.task_id}]`;
    case 'task.event':
      if (p.kind === 'state') return `state → ${p.state}`;
      if (p.kind === 'progress')
        return clip(`progress ${p.percent === undefined ? '' : `${p.percent}% `}${p.stage ?? ''}${p.message ? `: ${p.message}` : ''}`);
      if (p.kind === 'log') return clip(`log ${p.message}`);
      return clip(`output ${JSON.stringify(p.data)}`);
    case 'task.result':
      return p.error
        ? `${p.status} (${p.error.code})`
        : `${p.status}${p.output === undefined ? '' : ` ${clip(JSON.stringify(p.output), 48)}`}`;
    case 'task.cancel':
      return `[${msg.task_id}]${p.reason ? ` ${p.reason}` : ''}`;
    case 'task.snapshot':
      return `${p.state} at sequence ${p.last_sequence}`;
    case 'plan.submit':
      return `plan ${p.plan.plan_id}: ${p.plan.steps.length} steps (${p.plan.steps.map((s: any) => `${s.action} ${s.target}`).join(', ')}), risk ${p.plan.risk_level}`;
    case 'plan.decision':
      return `${p.decision} plan ${p.plan_id}${p.feedback ? `: ${p.feedback}` : ''}`;
    case 'task.handoff':
      return `[${msg.task_id}] ${p.resume_hint}`;
    case 'session.farewell':
      return p.reason;
    case 'shutdown.request':
      return `${p.reason} (grace ${p.grace_ms} ms)`;
    case 'shutdown.response':
      return p.approve ? 'approved' : `declined: ${p.reason ?? ''}`;
    case 'error':
      return `${p.code}: ${clip(p.message)}`;
    default:
      return '';
  }
}

/** "coordinator → analyst   task.request        requirements.analyse [task-…]" */
export function line(msg: TapMessage, from: string, to: string, width = 11): string {
  return `${from.padEnd(width)} → ${to.padEnd(width)} ${msg.type.padEnd(17)} ${describe(msg)}`;
}
