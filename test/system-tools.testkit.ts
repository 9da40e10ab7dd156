/**
 * The system tools some tests need, from Debian's packages: whether each is here, and the title
 * that names it, so that a test skipped for want of it is counted and explained by `npm test`
 * (tools/test-all.ts) and fails CI (.ci/run) instead of passing by silence.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { NATS_SERVER_BIN, natsServerInstalled } from '../reference/transports/nats/nats-server.testkit.ts';

/** How to install each tool. */
export const INSTALL = {
  'nats-server': 'apt-get install nats-server (or set TAP_NATS_SERVER)',
  chromium: 'apt-get install chromium',
  python3: 'apt-get install python3',
  openssl: 'apt-get install openssl',
  go: 'apt-get install golang-go',
  'rust-serde': 'apt-get install cargo librust-serde-dev librust-serde-json-dev librust-serde-derive-dev',
} as const;

export type SystemTool = keyof typeof INSTALL;

/** Where the site's browser test finds Chromium. */
export const CHROMIUM = '/usr/bin/chromium';

/** The folder of Debian's offline Rust crates. */
export const CARGO_REGISTRY = '/usr/share/cargo/registry';

const runs = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;

const PRESENT: Record<SystemTool, () => boolean> = {
  'nats-server': () => natsServerInstalled,
  chromium: () => existsSync(CHROMIUM),
  python3: () => runs('python3', ['--version']),
  openssl: () => runs('openssl', ['version']),
  go: () => runs('go', ['version']),
  'rust-serde': () =>
    runs('cargo', ['--version']) &&
    existsSync(CARGO_REGISTRY) &&
    ['serde-', 'serde_json-', 'serde_derive-'].every((p) => readdirSync(CARGO_REGISTRY).some((n) => n.startsWith(p))),
};

const known = new Map<SystemTool, boolean>();

/** True when `tool` is missing here (checked once per process). */
export function lacks(tool: SystemTool): boolean {
  if (!known.has(tool)) known.set(tool, PRESENT[tool]());
  return !known.get(tool);
}

/** The title of a suite or test that needs `tool`: `title [needs tool]`. */
export function needing(tool: SystemTool, title: string): string {
  return `${title} [needs ${tool}]`;
}

/** Finds the tool a test title names with `needing`. */
export const NEEDS = /\[needs ([a-z0-9-]+)\]/;

/** The reason of a skip for want of `tool`, for the last lines of npm test. */
export function missingReason(tool: string): string {
  return `${tool} missing: ${INSTALL[tool as SystemTool] ?? 'install it'}`;
}

export { NATS_SERVER_BIN };
