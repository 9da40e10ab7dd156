/**
 * The options of `tap-conform --workspace`: taken out of the command line before the common
 * options are parsed (conformance/options.ts), so that every other option keeps its meaning.
 * No I/O here.
 */

/** The settings of the workspace the harness initialises, and the agent id it gives the agent. */
export interface WorkspaceOptions {
  dir: string;
  agentId: string;
  leaseMs: number;
  maxAttempts: number;
  historyLimit: number;
  claimMode: 'rename' | 'lock';
  /** `--profile workspace` was given (alone or with others). */
  workspaceProfile: boolean;
}

export const DEFAULT_AGENT_ID = 'tap.workspace-agent';
export const DEFAULT_LEASE_MS = 1500;
export const DEFAULT_MAX_ATTEMPTS = 3;
export const DEFAULT_HISTORY_LIMIT = 4;

export const WORKSPACE_USAGE = `Workspace binding:
  tap-conform [options] --workspace <dir> -- <command> [args…]
      initialise <dir> (new or empty) as a workspace, start the command once with
      TAP_WORKSPACE=<dir> and TAP_AGENT_ID=<id> in its environment ({workspace} and
      {agent_id} in its arguments are replaced too), then run the message-protocol cases
      over mailboxes and the workspace cases over task records

  --agent-id <id>         the agent id given to the agent (default ${DEFAULT_AGENT_ID})
  --lease-ms <n>          lease_ms of the workspace (default ${DEFAULT_LEASE_MS}; reaper cases wait about 3 leases)
  --max-attempts <n>      max_attempts of the workspace (default ${DEFAULT_MAX_ATTEMPTS})
  --history-limit <n>     history_limit of the workspace (default ${DEFAULT_HISTORY_LIMIT})
  --claim-mode <mode>     rename (default) or lock
  --profile workspace     run only the workspace cases (other profiles as usual)`;

const VALUED = ['workspace', 'agent-id', 'lease-ms', 'max-attempts', 'history-limit', 'claim-mode'] as const;
type Valued = (typeof VALUED)[number];

/** True when the command line asks for the workspace binding (`--workspace` before any `--`). */
export function wantsWorkspace(argv: readonly string[]): boolean {
  const dashdash = argv.indexOf('--');
  const head = dashdash === -1 ? argv : argv.slice(0, dashdash);
  return head.some((a) => a === '--workspace' || a.startsWith('--workspace='));
}

export type SplitResult = { ok: true; rest: string[]; options: WorkspaceOptions } | { ok: false; error: string };

function int(name: string, v: string | undefined, min: number, fallback: number): number | string {
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v) || Number(v) < min) return `--${name} must be an integer of at least ${min}, not "${v}"`;
  return Number(v);
}

/** Takes the workspace options out of argv; the rest goes to the common parser. */
export function splitWorkspaceArgs(argv: readonly string[]): SplitResult {
  const dashdash = argv.indexOf('--');
  const head = dashdash === -1 ? [...argv] : argv.slice(0, dashdash);
  const tail = dashdash === -1 ? [] : argv.slice(dashdash);
  const rest: string[] = [];
  const got: Partial<Record<Valued, string>> = {};
  let workspaceProfile = false;
  for (let i = 0; i < head.length; i++) {
    const a = head[i]!;
    const eq = a.indexOf('=');
    const flag = a.startsWith('--') ? (eq === -1 ? a.slice(2) : a.slice(2, eq)) : '';
    if ((VALUED as readonly string[]).includes(flag)) {
      const value = eq === -1 ? head[++i] : a.slice(eq + 1);
      if (value === undefined || value.startsWith('--')) return { ok: false, error: `--${flag} needs a value` };
      got[flag as Valued] = value;
      continue;
    }
    if (flag === 'profile') {
      const value = eq === -1 ? head[++i] : a.slice(eq + 1);
      if (value === undefined) return { ok: false, error: '--profile needs a value' };
      const others = value.split(',').filter((p) => {
        if (p !== 'workspace') return p !== '';
        workspaceProfile = true;
        return false;
      });
      if (others.length > 0) rest.push('--profile', others.join(','));
      continue;
    }
    rest.push(a);
  }
  if (!got.workspace) return { ok: false, error: '--workspace needs a directory' };
  const agentId = got['agent-id'] ?? DEFAULT_AGENT_ID;
  if (!/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(agentId) || agentId.length > 128) {
    return { ok: false, error: `--agent-id "${agentId}" is not an identifier (lowercase letters, digits, "_", "-", dot-separated)` };
  }
  const leaseMs = int('lease-ms', got['lease-ms'], 100, DEFAULT_LEASE_MS);
  const maxAttempts = int('max-attempts', got['max-attempts'], 1, DEFAULT_MAX_ATTEMPTS);
  const historyLimit = int('history-limit', got['history-limit'], 2, DEFAULT_HISTORY_LIMIT);
  for (const v of [leaseMs, maxAttempts, historyLimit]) if (typeof v === 'string') return { ok: false, error: v };
  const claimMode = got['claim-mode'] ?? 'rename';
  if (claimMode !== 'rename' && claimMode !== 'lock') return { ok: false, error: `--claim-mode is rename or lock, not "${claimMode}"` };
  return {
    ok: true,
    rest: [...rest, ...tail],
    options: {
      dir: got.workspace,
      agentId,
      leaseMs: leaseMs as number,
      maxAttempts: maxAttempts as number,
      historyLimit: historyLimit as number,
      claimMode,
      workspaceProfile,
    },
  };
}
