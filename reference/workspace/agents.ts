/**
 * The files an agent keeps in the workspace: `agents/<agent_id>/card.json`, `state.json` and
 * `heartbeat.json`, and the lease sidecar of each claim it holds
 * (spec: bindings-workspace#agents, #leases).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { AgentCard } from '../../schemas/src/index.ts';
import type { Workspace } from './workspace.ts';
import { ensureDir, listNames, readBounded, readJsonFile, writeAtomic } from './fsio.ts';
import { isIdentifier } from './layout.ts';

/** `agents/<agent_id>/state.json`: the phases an agent serves and what it is doing. */
export interface AgentState {
  agent_id: string;
  phases: string[];
  status: 'idle' | 'busy' | 'stopped';
  updated_at: string;
  /** The claims it holds, as `<task_id>@<epoch>`. */
  holding?: string[];
}

/** `agents/<agent_id>/heartbeat.json`: rewritten with an increasing counter while the agent runs. */
export interface Heartbeat {
  agent_id: string;
  counter: number;
  at: string;
  pid: number;
}

/** The lease sidecar of a claim: holder, epoch and a renewal counter (spec: bindings-workspace#leases). */
export interface Lease {
  agent_id: string;
  epoch: number;
  renewals: number;
}

/** Publishes an agent's card and state; done before it claims anything (spec: bindings-workspace#agents). */
export async function publishAgent(ws: Workspace, card: AgentCard, state: AgentState): Promise<void> {
  const dir = ws.paths.agent(card.agent_id);
  await ensureDir(dir);
  await writeAtomic(join(dir, 'card.json'), JSON.stringify(card, null, 2) + '\n');
  await writeAgentState(ws, state);
}

/** Rewrites `state.json`. */
export async function writeAgentState(ws: Workspace, state: AgentState): Promise<void> {
  await writeAtomic(join(ws.paths.agent(state.agent_id), 'state.json'), JSON.stringify(state, null, 2) + '\n');
}

/** Rewrites `heartbeat.json` with the next counter. */
export async function writeHeartbeat(ws: Workspace, agentId: string, counter: number): Promise<void> {
  const beat: Heartbeat = { agent_id: agentId, counter, at: new Date().toISOString(), pid: process.pid };
  await writeAtomic(join(ws.paths.agent(agentId), 'heartbeat.json'), JSON.stringify(beat) + '\n');
}

/** Writes (or renews) the lease of a claim. */
export async function writeLease(ws: Workspace, taskId: string, epoch: number, lease: Lease): Promise<void> {
  await writeAtomic(ws.paths.sidecar(taskId, epoch, 'lease'), JSON.stringify(lease) + '\n');
}

/** The lease of a claim, or null when there is none (or it is unreadable). */
export async function readLease(ws: Workspace, taskId: string, epoch: number): Promise<Lease | null> {
  const v = (await readJsonFile(ws.paths.sidecar(taskId, epoch, 'lease'), 64 * 1024)) as Partial<Lease> | null;
  return v && typeof v.agent_id === 'string' ? (v as Lease) : null;
}

/** The lease file's bytes as a string, or "absent": what a reaper compares between observations. */
export async function leaseSignature(ws: Workspace, taskId: string, epoch: number): Promise<string> {
  const r = await readBounded(ws.paths.sidecar(taskId, epoch, 'lease'), 64 * 1024);
  return r ? Buffer.from(r.bytes).toString('utf8') : 'absent';
}

/** What the workspace shows about one agent. */
export interface AgentInfo {
  agent_id: string;
  card: AgentCard | null;
  state: AgentState | null;
  heartbeat: Heartbeat | null;
  /** Milliseconds since heartbeat.json last changed, by this host's clock and the file's mtime (an estimate for people). */
  heartbeat_age_ms: number | null;
}

/** Every agent directory under `agents/`, with what its files say. */
export async function listAgents(ws: Workspace, now = Date.now()): Promise<AgentInfo[]> {
  const out: AgentInfo[] = [];
  for (const name of (await listNames(ws.paths.agents)).sort()) {
    if (!isIdentifier(name)) continue;
    const dir = ws.paths.agent(name);
    const beatPath = join(dir, 'heartbeat.json');
    const mtime = await fsp.stat(beatPath).then(
      (s) => s.mtimeMs,
      () => null,
    );
    out.push({
      agent_id: name,
      card: (await readJsonFile(join(dir, 'card.json'))) as AgentCard | null,
      state: (await readJsonFile(join(dir, 'state.json'))) as AgentState | null,
      heartbeat: (await readJsonFile(beatPath)) as Heartbeat | null,
      heartbeat_age_ms: mtime === null ? null : Math.max(0, Math.round(now - mtime)),
    });
  }
  return out;
}
