/**
 * The main job: certifies the bundled reference agent with tap-conform over stdio and over
 * WebSocket, printing each report and writing the JSON, HTML, JUnit and badge reports of each
 * binding into reports/ (or `--reports <dir>`). `--package <dir>` runs the bins of an installed
 * copy of the package instead of this checkout's (the tarball test does). `--stdio-only <id>`
 * (repeatable) narrows the plain stdio run to those cases, for a caller that certifies the whole
 * suite over stdio elsewhere (npm test: the README's agent, tools/test-all.ts). Other arguments
 * after `--` go to tap-conform. A line is printed at least every 10 s while a run is quiet.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair } from 'jose';
import { b64u, newKey } from '../conformance/mac.ts';
import { HARNESS_SIGNED_ID } from '../conformance/options.ts';
import { missingSpecSite } from '../conformance/report/links.ts';
import { makeCertificates } from '../test/certificates.testkit.ts';
import { lacks } from '../test/system-tools.testkit.ts';
import { RUNS } from './certify-judge.ts';
import { startListening } from './listening-agent.ts';
import { buildSite } from './site/build.ts';

const root = new URL('..', import.meta.url).pathname;
const QUIET_MS = 10_000;

/** Runs tap-conform, passing its output through; prints a line whenever it has been quiet for 10 s. */
export function runConform(conform: string, args: string[], env: NodeJS.ProcessEnv, label: string): Promise<number> {
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

export function stop(child: ChildProcess): Promise<number | null> {
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

/** The token issuer's identity and the audience of the reference agent (spec: security#tokens). */
const ISSUER = 'https://issuer.certify.tap';
const AUDIENCE = 'tap.reference-agent';

/** Tokens (spec: security#bearer-tokens): an issuer's key pair in `dir`, the agent trusting its public key. */
async function tokenCredentials(dir: string): Promise<Credentials> {
  const pair = await generateKeyPair('ES256', { extractable: true });
  const jwks = join(dir, 'jwks.json');
  const issuerKey = join(dir, 'issuer.jwk');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'certify-1', alg: 'ES256' }] }));
  writeFileSync(issuerKey, JSON.stringify({ ...(await exportJWK(pair.privateKey)), kid: 'certify-1' }));
  return {
    agent: ['--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE, '--jwt-keys', jwks],
    harness: ['--jwt-key', issuerKey, '--jwt-issuer', ISSUER, '--jwt-audience', AUDIENCE],
  };
}

/**
 * Client certificates (spec: security#client-certificates), made with openssl: an authority, the
 * agent's server certificate, and two client certificates (two principals).
 */
function certificateCredentials(): Credentials {
  const kit = makeCertificates();
  cleanups.push(() => kit.remove());
  const server = kit.ca.server();
  const clients = ['alice', 'bob'].map((name) => kit.ca.client(name, { san: `URI:spiffe://certify.tap/${name}` }));
  return {
    agent: ['--tls-cert', server.certFile, '--tls-key', server.keyFile, '--tls-ca', kit.ca.certFile],
    harness: ['--tls-ca', kit.ca.certFile, ...clients.flatMap((c) => ['--tls-cert', c.certFile, '--tls-key', c.keyFile])],
  };
}

/** A kind of credential: the agent's options that require it and the harness's that present it. */
interface Credentials {
  agent: string[];
  harness: string[];
}

const cleanups: (() => void)[] = [];

/** The report options of one binding's run: every format, named after the binding. */
function reportArgs(dir: string, name: string): string[] {
  const at = (ext: string) => join(dir, `${name}.${ext}`);
  return ['--json', at('json'), '--html', at('html'), '--junit', at('xml'), '--badge', at('svg')];
}

interface WebSocketRun {
  name: (typeof RUNS.websocket)[number];
  label: string;
  conform: string;
  agent: string;
  agentArgs: string[];
  harnessArgs?: string[];
  env: NodeJS.ProcessEnv;
  /** The folder of the agent's log. */
  scratch: string;
  reports: string;
  extra: string[];
}

/** Starts the reference agent listening with `agentArgs`, runs tap-conform against it, stops it; resolves with the exit code. */
async function webSocketRun(o: WebSocketRun): Promise<number> {
  // The agent's own log (what it noticed about the harness's deliberate misbehaviour) is kept aside.
  const log = join(o.scratch, `${o.name}-agent.log`);
  try {
    // A resume window of 10 s (not the default 5 min) lets the case of an orphaned session's end run.
    const { url, child } = await startListening([process.execPath, o.agent, ...o.agentArgs, '--resume-window-ms', '10000'], {
      cwd: root,
      env: o.env,
      stderr: openSync(log, 'w'),
      timeoutMs: 20_000,
    });
    // A base64url key may start with "-": the HMAC key is passed as one argument (--hmac-key=…).
    let code = await runConform(o.conform, [...reportArgs(o.reports, o.name), ...o.extra, ...(o.harnessArgs ?? []), url], o.env, o.label);
    const exit = await stop(child);
    if (exit !== 0) {
      console.error(`certify: the reference agent of ${o.label} exited with ${exit} on SIGTERM (expected 0)`);
      code = code || 1;
    }
    return code;
  } catch (err) {
    console.error(`certify: ${o.label}: ${(err as Error).message}`);
    return 3;
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    options: { reports: { type: 'string' }, package: { type: 'string' }, 'stdio-only': { type: 'string', multiple: true } },
    allowPositionals: true,
  });
  const pkg = resolve(values.package ?? root);
  const conform = join(pkg, 'bin/tap-conform.mjs');
  const agent = join(pkg, 'bin/tap-reference-agent.mjs');
  const reports = resolve(values.reports ?? join(root, 'reports'));
  mkdirSync(reports, { recursive: true });
  const extra = positionals;
  const started = Date.now();
  // The reports link into the spec site the package ships; a clone builds it once, before the first run.
  if (!values.package && missingSpecSite()) {
    const site = await buildSite();
    console.log(`certify: built the spec site the reports link to (${site.pages.length} pages in ${relative(process.cwd(), site.out)})`);
  }

  const scratch = mkdtempSync(join(tmpdir(), 'tap-certify-'));
  // The security profile (spec: security) runs in runs of its own, with the authorization profile:
  // each kind of credential decides a session's principal alone, so each needs a run without the
  // other (and the plain runs, sessions that authenticate nobody).
  const focus = ['--profile', 'security', '--profile', 'authorization'];
  const tokens = await tokenCredentials(scratch);

  const stdioOnly = values['stdio-only'] ?? [];
  console.log(
    `\n=== tap-conform: reference agent over stdio (${relative(process.cwd(), pkg) || '.'})${stdioOnly.length ? `, ${stdioOnly.length} cases` : ''} ===\n`,
  );
  // A state folder per case ("{state}", made by tap-conform) gives the agent durability "restart",
  // so the crash-and-restart cases run too (spec: tasks#durability).
  const stdioRun = (name: string, args: string[], agentArgs: string[]) =>
    runConform(
      conform,
      [...reportArgs(reports, name), ...extra, ...args, '--', process.execPath, agent, ...agentArgs],
      process.env,
      `the ${name} run`,
    );
  const stdioRuns = [
    await stdioRun(
      'stdio',
      stdioOnly.flatMap((id) => ['--only', id]),
      ['--state-dir', '{state}'],
    ),
  ];
  console.log('\n=== tap-conform: the security profile over stdio with bearer tokens ===\n');
  stdioRuns.push(await stdioRun('stdio-tokens', [...focus, ...tokens.harness], tokens.agent));
  const stdio = stdioRuns.find((code) => code !== 0) ?? 0;

  // Over WebSocket the agent and the harness share a fresh HMAC key, so the integrity profile runs
  // too (spec: integrity); the replay commands tap-conform prints read it from $TAP_HMAC_KEY.
  const key = { TAP_HMAC_KEY_ID: 'certify', TAP_HMAC_KEY: b64u(newKey()), TAP_HMAC_PEER: HARNESS_SIGNED_ID };
  const env = { ...process.env, ...key };
  const hmac = ['--hmac-key-id', key.TAP_HMAC_KEY_ID, `--hmac-key=${key.TAP_HMAC_KEY}`, '--hmac-peer', key.TAP_HMAC_PEER];
  const run = (o: Omit<WebSocketRun, 'conform' | 'agent' | 'env' | 'scratch' | 'reports' | 'extra'>) =>
    webSocketRun({ ...o, conform, agent, env, scratch, reports, extra: [...extra, ...hmac] });
  // The agent keeps its tasks in a state folder here too (durability "restart"): every case of the
  // suite runs against the durable store, as over stdio, where only the restart cases need it.
  console.log('\n=== tap-conform: reference agent over WebSocket (signed with a fresh HMAC key, tasks kept in a state folder) ===\n');
  const wsState = join(scratch, 'websocket-state');
  mkdirSync(wsState);
  const runs = [
    await run({ name: 'websocket', label: 'the WebSocket run', agentArgs: ['--listen', 'ws://127.0.0.1:0', '--state-dir', wsState] }),
  ];
  if (lacks('openssl')) console.log('\ncertify: no openssl here to make certificates: the client certificate run is left out\n');
  else {
    const certificates = certificateCredentials();
    console.log('\n=== tap-conform: the security profile over WebSocket with TLS and client certificates ===\n');
    runs.push(
      await run({
        name: 'websocket-tls',
        label: 'the TLS run',
        agentArgs: ['--listen', 'wss://127.0.0.1:0', ...certificates.agent],
        harnessArgs: [...focus, ...certificates.harness],
      }),
    );
  }
  console.log('\n=== tap-conform: the security profile over WebSocket with bearer tokens ===\n');
  runs.push(
    await run({
      name: 'websocket-tokens',
      label: 'the token run',
      agentArgs: ['--listen', 'ws://127.0.0.1:0', ...tokens.agent],
      harnessArgs: [...focus, ...tokens.harness],
    }),
  );
  // One agent serves every session of a WebSocket run, with the card it started with: the case of a
  // short max_task_seconds runs against an agent started with one (spec: conformance#case-limits).
  console.log('\n=== tap-conform: the case of a short max_task_seconds over WebSocket ===\n');
  runs.push(
    await run({
      name: 'websocket-case-limits',
      label: 'the case-limits run',
      agentArgs: ['--listen', 'ws://127.0.0.1:0', '--max-task-seconds', '2'],
      harnessArgs: ['--only', 'tasks.deadline.max-task-seconds'],
    }),
  );
  for (const clean of cleanups.splice(0)) clean();
  const ws = runs.find((code) => code !== 0) ?? 0;
  if (ws === 0 && stdio === 0) rmSync(scratch, { recursive: true, force: true });
  else console.error(`certify: the WebSocket agents' logs are in ${scratch}`);
  const where = relative(process.cwd(), reports) || '.';
  console.log(
    `\nstdio: ${stdio !== 0 ? `not certified (exit ${stdio})` : stdioOnly.length ? `the ${stdioOnly.length} cases given passed (a focused run)` : 'certified'}; WebSocket: ${ws === 0 ? 'certified' : `not certified (exit ${ws})`}` +
      ` — in ${Math.round((Date.now() - started) / 1000)} s`,
  );
  console.log(`reports: ${where}/{${[...RUNS.stdio, ...RUNS.websocket].join(',')}}.{json,html,xml,svg}`);
  return stdio === 0 && ws === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exit(await main());
