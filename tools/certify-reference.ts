/**
 * The main job: certifies the bundled reference agent with tap-conform over stdio and over
 * WebSocket, printing each report and writing the JSON, HTML, JUnit and badge reports of each
 * binding into reports/ (or `--reports <dir>`). `--package <dir>` runs the bins of an installed
 * copy of the package instead of this checkout's (the tarball test does). Other arguments after
 * `--` go to tap-conform. A line is printed at least every 10 s while a run is quiet.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { b64u, newKey } from '../conformance/mac.ts';
import { HARNESS_SIGNED_ID } from '../conformance/options.ts';
import { startListening } from './listening-agent.ts';

const root = new URL('..', import.meta.url).pathname;
const QUIET_MS = 10_000;

/** Runs tap-conform, passing its output through; prints a line whenever it has been quiet for 10 s. */
function runConform(conform: string, args: string[], env: NodeJS.ProcessEnv, label: string): Promise<number> {
  return new Promise((resolve) => {
    const started = Date.now();
    let last = Date.now();
    const child = spawn(process.execPath, [conform, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const pass = (to: NodeJS.WriteStream) => (d: Buffer) => {
      last = Date.now();
      to.write(d);
    };
    child.stdout.on('data', pass(process.stdout));
    child.stderr.on('data', pass(process.stderr));
    const tick = setInterval(() => {
      if (Date.now() - last < QUIET_MS) return;
      last = Date.now();
      console.log(`certify: ${label} still running (${Math.round((Date.now() - started) / 1000)} s)`);
    }, 1000);
    child.on('close', (code) => {
      clearInterval(tick);
      resolve(code ?? 1);
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.removeAllListeners('exit');
    child.on('exit', (code) => {
      clearTimeout(kill);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}

/** The report options of one binding's run: every format, named after the binding. */
function reportArgs(dir: string, name: string): string[] {
  const at = (ext: string) => join(dir, `${name}.${ext}`);
  return ['--json', at('json'), '--html', at('html'), '--junit', at('xml'), '--badge', at('svg')];
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { reports: { type: 'string' }, package: { type: 'string' } },
    allowPositionals: true,
  });
  const pkg = resolve(values.package ?? root);
  const conform = join(pkg, 'bin/tap-conform.mjs');
  const agent = join(pkg, 'bin/tap-reference-agent.mjs');
  const reports = resolve(values.reports ?? join(root, 'reports'));
  mkdirSync(reports, { recursive: true });
  const extra = positionals;
  const started = Date.now();

  console.log(`\n=== tap-conform: reference agent over stdio (${relative(process.cwd(), pkg) || '.'}) ===\n`);
  // A state folder per case ("{state}", made by tap-conform) gives the agent durability "restart",
  // so the crash-and-restart cases run too (spec: tasks#durability).
  const stdio = await runConform(
    conform,
    [...reportArgs(reports, 'stdio'), ...extra, '--', process.execPath, agent, '--state-dir', '{state}'],
    process.env,
    'the stdio run',
  );

  // Over WebSocket the agent and the harness share a fresh HMAC key, so the integrity profile runs
  // too (spec: integrity); the replay commands tap-conform prints read it from $TAP_HMAC_KEY.
  const key = { TAP_HMAC_KEY_ID: 'certify', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: HARNESS_SIGNED_ID };
  const env = { ...process.env, ...key };
  console.log('\n=== tap-conform: reference agent over WebSocket (signed with a fresh HMAC key) ===\n');
  // The agent's own log (what it noticed about the harness's deliberate misbehaviour) is kept aside.
  const log = join(mkdtempSync(join(tmpdir(), 'tap-certify-')), 'websocket-agent.log');
  let ws = 3;
  try {
    // A resume window of 10 s (not the default 5 min) lets the case of an orphaned session's end run.
    const { url, child } = await startListening([process.execPath, agent, '--listen', 'ws://127.0.0.1:0', '--resume-window-ms', '10000'], {
      cwd: root,
      env,
      stderr: openSync(log, 'w'),
      timeoutMs: 20_000,
    });
    ws = await runConform(
      conform,
      [
        ...reportArgs(reports, 'websocket'),
        ...extra,
        '--hmac-key-id',
        key.TAP_HMAC_KEY_ID,
        // One argument: a base64url key may start with "-".
        `--hmac-key=${key.TAP_HMAC_KEY}`,
        '--hmac-peer',
        key.TAP_HMAC_PEER,
        url,
      ],
      env,
      'the WebSocket run',
    );
    const exit = await stop(child);
    if (exit !== 0) {
      console.error(`certify: the WebSocket reference agent exited with ${exit} on SIGTERM (expected 0)`);
      ws = ws || 1;
    }
  } catch (err) {
    console.error(`certify: ${(err as Error).message}`);
  }
  if (ws !== 0) console.error(`certify: the WebSocket agent's log is in ${log}`);
  else rmSync(dirname(log), { recursive: true, force: true });
  const where = relative(process.cwd(), reports) || '.';
  console.log(
    `\nstdio: ${stdio === 0 ? 'certified' : `not certified (exit ${stdio})`}; WebSocket: ${ws === 0 ? 'certified' : `not certified (exit ${ws})`}` +
      ` — in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  console.log(`reports: ${where}/stdio.{json,html,xml,svg} and ${where}/websocket.{json,html,xml,svg}`);
  return stdio === 0 && ws === 0 ? 0 : 1;
}

process.exit(await main());
