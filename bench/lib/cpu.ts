/**
 * CPU time per task, on each side of a round trip: the requester is this process
 * (process.cpuUsage), the agent a child process read from /proc/<pid>/stat (Linux). When both
 * sides run in this process (the in-memory pair) the one figure covers both. This is what a task
 * costs a machine at scale, whatever the load on it; wall-clock rates only say so on a quiet one.
 */
import { readFileSync } from 'node:fs';
import { spread, type Spread } from './stats.ts';

/** Clock ticks per second of /proc/<pid>/stat: USER_HZ, 100 on every Linux build Node runs on. */
const USER_HZ = 100;

/** The CPU time (user + system) a child process has used, in µs, or null when /proc cannot tell. */
export function childCpuUs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) start at its closing parenthesis;
    // utime and stime are fields 14 and 15, the 12th and 13th after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1e6) / USER_HZ : null;
  } catch {
    return null;
  }
}

/** The CPU time (user + system) this process has used, in µs. */
export function ownCpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** CPU µs per task of one measured loop: the requester's (this process) and the agent's when it is a child. */
export interface CpuPerTask {
  requester_cpu_us: number;
  agent_cpu_us?: number;
}

/** Runs `loop` (which reports how many calls it completed) and adds the CPU each side spent per call. */
export async function measuringCpu<R extends { calls: number }>(
  agentPid: number | undefined,
  loop: () => Promise<R>,
): Promise<R & { cpu: CpuPerTask }> {
  const own0 = ownCpuUs();
  const agent0 = agentPid === undefined ? null : childCpuUs(agentPid);
  const r = await loop();
  const own1 = ownCpuUs();
  const agent1 = agentPid === undefined ? null : childCpuUs(agentPid);
  const calls = Math.max(1, r.calls);
  const cpu: CpuPerTask = { requester_cpu_us: (own1 - own0) / calls };
  if (agent0 !== null && agent1 !== null) cpu.agent_cpu_us = (agent1 - agent0) / calls;
  return { ...r, cpu };
}

/** The process ids of `pid` and of every process under it, from /proc (Linux); just `pid` where /proc cannot tell. */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      const text = readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8').trim();
      if (text !== '') out.push(...text.split(' ').map(Number));
    } catch {
      // Gone, or no /proc: what was found stands.
    }
  }
  return out;
}

/** The CPU time (user + system) of several child processes together, in µs, or null when /proc cannot tell for one of them. */
export function childrenCpuUs(pids: readonly number[]): number | null {
  let sum = 0;
  for (const pid of pids) {
    const us = childCpuUs(pid);
    if (us === null) return null;
    sum += us;
  }
  return sum;
}

/**
 * The CPU each side spent per call over `loop`, which makes `calls` calls: this process
 * (`requester`), and each named group of child processes together, null where /proc cannot tell.
 */
export async function cpuPerCall<K extends string, R>(
  groups: Record<K, readonly number[]>,
  calls: number,
  loop: () => Promise<R>,
): Promise<{ result: R; requester: number; groups: Record<K, number | null> }> {
  const names = Object.keys(groups) as K[];
  const own0 = ownCpuUs();
  const before = names.map((k) => childrenCpuUs(groups[k]));
  const result = await loop();
  const own1 = ownCpuUs();
  const n = Math.max(1, calls);
  const out = {} as Record<K, number | null>;
  names.forEach((k, i) => {
    const after = childrenCpuUs(groups[k]);
    const start = before[i];
    out[k] = after === null || start === null || start === undefined ? null : (after - start) / n;
  });
  return { result, requester: (own1 - own0) / n, groups: out };
}

/**
 * CPU µs per call of one measured loop, side by side: this process (the requester or publisher),
 * the processes that answer together (agents, responders, runners, consumers), and nats-server;
 * null where /proc could not tell.
 */
export interface SideCpu {
  requester: number;
  agents: number | null;
  server: number | null;
}

/** Figure extras (cpu_requester_us, cpu_agents_us, cpu_server_us): the spread of each side that every loop read. */
export function sideCpuExtras(runs: readonly (SideCpu | undefined)[]): Record<string, Spread> {
  const out: Record<string, Spread> = {};
  for (const side of ['requester', 'agents', 'server'] as const) {
    const values = runs.map((r) => r?.[side]);
    if (values.length > 0 && values.every((v): v is number => typeof v === 'number')) out[`cpu_${side}_us`] = spread(values);
  }
  return out;
}
