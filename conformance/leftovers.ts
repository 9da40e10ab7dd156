/**
 * Processes an agent left behind: every spawned agent carries a marker in its environment, which
 * its children and daemonised grandchildren inherit even after they leave its process group;
 * at the end of a case they are found by that marker and killed (spec: conformance#processes).
 * The state folders of the cases running when the harness ends are removed with them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The environment variable that marks the processes of one spawned agent. */
export const MARKER_VAR = 'TAP_CONFORM_AGENT';

/** A fresh marker value. */
export function newMarker(): string {
  return randomBytes(9).toString('base64url');
}

/** The pids of live processes whose environment holds `MARKER_VAR=marker` (Linux /proc; none elsewhere). */
export function markedProcesses(marker: string): number[] {
  const needle = `${MARKER_VAR}=${marker}`;
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, 'latin1');
      if (env.split('\0').includes(needle)) out.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** Kills every process marked with `marker`; returns how many there were. */
export function killMarked(marker: string): number {
  const pids = markedProcesses(marker);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return pids.length;
}

/**
 * Kills every process marked with `marker` and waits, up to `withinMs`, until none is left (a
 * killed process lingers until the kernel has torn it down, longer on a loaded machine); kills
 * again what is still there. Resolves with how many there were at first.
 */
export async function killMarkedAndWait(marker: string, withinMs = 5000): Promise<number> {
  const first = killMarked(marker);
  if (first === 0) return 0;
  const end = Date.now() + withinMs;
  while (killMarked(marker) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return first;
}

/** Markers of agents whose processes may still run, killed if the harness ends first. */
const live = new Set<string>();
/** Folders the cases made and have not removed yet, removed if the harness ends first. */
const folders = new Set<string>();
let hooked = false;

/** What is left when the harness exits or is interrupted: the marked processes killed, the folders removed. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  const killAll = (): void => {
    for (const m of live) killMarked(m);
    for (const f of folders) rmSync(f, { recursive: true, force: true });
  };
  process.once('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.prependOnceListener(sig, () => {
      killAll();
      // Nobody else handles it: die of the signal, as without this listener.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

/** Remembers `marker` until `forget`: if the harness exits or is interrupted, its processes are killed. */
export function track(marker: string): void {
  live.add(marker);
  hookExit();
}

/** Forgets `marker` once its processes are gone. */
export function forget(marker: string): void {
  live.delete(marker);
}

/** A fresh state folder for a case (or the probe), removed if the harness exits or is interrupted before `removeStateFolder`. */
export function makeStateFolder(prefix = 'tap-conform-state-'): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  folders.add(path);
  hookExit();
  return path;
}

/** Removes a state folder that makeStateFolder made. */
export function removeStateFolder(path: string): void {
  rmSync(path, { recursive: true, force: true });
  folders.delete(path);
}
