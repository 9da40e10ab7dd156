/** The machine and software a run measured: CPU, memory, OS, Node, package versions, commit, load. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './paths.ts';

export interface Machine {
  cpu: string;
  cores: number;
  memory_gib: number;
  os: string;
  node: string;
  /** Versions of the packages the run measured or compared against. */
  versions: Record<string, string>;
  commit: string;
  load_before: number[];
  load_after: number[];
}

const PACKAGES = [
  'ws',
  'ajv',
  '@modelcontextprotocol/sdk',
  'vscode-jsonrpc',
  'tsx',
  '@modelcontextprotocol/server-everything',
  '@a2a-js/sdk',
  'express',
];

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

function rootVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function commit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--', 'reference', 'conformance', 'bin'], { cwd: ROOT, encoding: 'utf8' }).trim() !==
      '';
    return dirty ? `${head} with uncommitted changes in reference/, conformance/ or bin/` : head;
  } catch {
    return 'unknown';
  }
}

/** Describes this machine now; `load_after` is filled in at the end of the run. */
export function describeMachine(): Machine {
  const list = cpus();
  const versions: Record<string, string> = { 'tap-agent-protocol': rootVersion() };
  for (const p of PACKAGES) versions[p] = packageVersion(p);
  return {
    cpu: list[0]?.model.trim() ?? 'unknown CPU',
    cores: list.length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.versions.node,
    versions,
    commit: commit(),
    load_before: loadavg(),
    load_after: [],
  };
}

export { loadavg };
