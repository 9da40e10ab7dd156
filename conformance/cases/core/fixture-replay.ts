/**
 * Core profile: the invalid-message fixtures (fixtures/invalid/), replayed against the live agent.
 * Each fixture is moved into the live session (fresh message_id, the session's identities, id and
 * clock) except for the member that is its defect, and must get the error its .expect.json names
 * (spec: errors#order-of-checks).
 */
import { join } from 'node:path';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { repoPath } from '../../paths.ts';
import type { Peer } from '../../peer.ts';
import type { Wire } from '../../session-state.ts';
import { protocolVersion } from '../../../reference/core/versions.ts';
import { messageEntry } from '../../schemas.ts';
import { later, laterThan } from '../../versions.ts';
import type { CaseContext } from '../../context.ts';
import { expectNothing, need } from '../kit.ts';
import { describeMessage, handshake } from '../../steps.ts';
import { fail, type Outcome, pass, skipped } from '../../verdict.ts';
import { type Case, defineCase } from '../../case.ts';

const DIR = repoPath('fixtures/invalid');

interface Expect {
  error: string;
  keyword?: string;
  path?: string;
  why?: string;
  decode?: { rejectDuplicateMembers?: boolean };
}

interface Fixture {
  name: string;
  /** A JSON message (patched into the session), or raw bytes sent as they are. */
  message?: Record<string, unknown>;
  raw?: Uint8Array;
  expect: Expect;
}

/** Reads one folder of fixtures/invalid/. */
export function loadFixtures(folder: string): Fixture[] {
  const dir = join(DIR, folder);
  if (!existsSync(dir)) return [];
  const out: Fixture[] = [];
  for (const f of readdirSync(dir).sort()) {
    if (f.endsWith('.expect.json')) continue;
    const base = f.replace(/\.(json|txt|bin)$/, '');
    const expectFile = join(dir, `${base}.expect.json`);
    if (!existsSync(expectFile)) continue;
    const expect = JSON.parse(readFileSync(expectFile, 'utf8')) as Expect;
    const bytes = readFileSync(join(dir, f));
    const name = `${folder}/${base}`;
    if (f.endsWith('.json')) out.push({ name, message: JSON.parse(bytes.toString('utf8')), expect });
    else
      out.push({
        name,
        raw: new Uint8Array(bytes.toString('utf8').endsWith('\n') && f.endsWith('.txt') ? bytes.subarray(0, bytes.length - 1) : bytes),
        expect,
      });
  }
  return out;
}

/** Moves a fixture message into the live session, leaving its defect (expect.path) alone. */
function patch(peer: Peer, m: Record<string, unknown>, e: Expect): Wire {
  const out = { ...m };
  const defect = (member: string) => (e.path ?? '').startsWith(`/${member}`);
  const set = (member: string, value: unknown) => {
    if (member in out && !defect(member) && value !== undefined) out[member] = value;
  };
  set('message_id', peer.ids.message());
  set('source', peer.state.selfId);
  if (out.target !== '*' || out.type === 'handshake.init') set('target', out.type === 'handshake.init' ? '*' : peer.state.agentId);
  set('session_id', peer.state.sessionId);
  // Fixtures are written in tap/1.0; in a session of another version they speak its version.
  if (out.protocol === 'tap/1.0' && peer.state.version) set('protocol', `tap/${peer.state.version}`);
  set('timestamp', new Date().toISOString());
  return out as unknown as Wire;
}

/** The error a fixture must get in a live session: a missing session_id fails session binding first. */
function wanted(f: Fixture, inSession: boolean): string[] {
  const m = f.message;
  if (inSession && m && !('session_id' in m) && messageEntry(String(m.type))?.session_id === 'required') {
    return [f.expect.error, 'PROTOCOL_VIOLATION'];
  }
  return [f.expect.error];
}

/** The handshake step timeout (spec: handshake#timeouts, TAP-HS-016): a transport still in a step is closed after it. */
const STEP_TIMEOUT_MS = 10_000;

/**
 * Replays fixtures one by one; reopens the session when the agent ends it after repeated bad
 * input (which it may do after 32 refusals). Before go (`inStep`) the handshake step timeout runs
 * and is not restarted by refusals (TAP-HS-042), so a transport is replaced once it is half that
 * old, and a fixture whose transport the agent closed at the step timeout is sent again on a new
 * one. Returns the mismatches.
 */
async function replay(
  ctx: CaseContext,
  fixtures: Fixture[],
  open: () => Promise<Peer>,
  inSession: boolean,
  inStep: boolean,
): Promise<{ problems: string[]; replayed: number }> {
  let peer = await open();
  // When the step began, at the latest: after the transport opened (or the ack came).
  let opened = ctx.transcript.now();
  const reopen = async () => {
    peer = await open();
    opened = ctx.transcript.now();
  };
  const problems: string[] = [];
  let replayed = 0;
  for (const f of fixtures) {
    if (f.expect.decode?.rejectDuplicateMembers) continue;
    if (peer.closed || (inStep && ctx.transcript.now() - opened > STEP_TIMEOUT_MS / 2)) await reopen();
    // A fixture of a later version's feature is no case of a session of an earlier one (spec: versioning#tap-1-1).
    if (peer.state.version !== undefined && f.message && laterFixture(f.message, peer.state.version)) continue;
    replayed++;
    for (let attempt = 0; ; attempt++) {
      const problem = await replayOne(peer, f, inSession);
      // Closed at the step timeout, not before: the agent did right, and the fixture goes again.
      const timedOut = inStep && peer.closed !== undefined && peer.closed.at - opened >= STEP_TIMEOUT_MS;
      if (problem && timedOut && attempt === 0) {
        await reopen();
        continue;
      }
      if (problem) problems.push(problem);
      break;
    }
  }
  return { problems, replayed };
}

/** True when a fixture speaks a version later than `version`, or holds what only a later one defines. */
function laterFixture(m: Record<string, unknown>, version: string): boolean {
  const spoken = typeof m.protocol === 'string' ? protocolVersion(m.protocol) : null;
  return later(spoken, version) || laterThan(m, version) !== null;
}

/** Sends one fixture and checks its answer; the mismatch, or undefined. */
async function replayOne(peer: Peer, f: Fixture, inSession: boolean): Promise<string | undefined> {
  const mark = peer.mark();
  let id: string | undefined;
  if (f.message) {
    const m = patch(peer, f.message, f.expect);
    id = typeof m.message_id === 'string' ? m.message_id : undefined;
    await peer.sendText(JSON.stringify(m), `fixture ${f.name}`);
  } else {
    // Raw fixtures share message ids; each gets its own, so no two frames claim one id.
    const text = Buffer.from(f.raw!).toString('latin1');
    const found = /"message_id":"([A-Za-z0-9._:-]*)"/.exec(text);
    if (found) {
      id = peer.ids.message();
      await peer.sendRaw(Buffer.from(text.replace(found[0], `"message_id":"${id}"`), 'latin1'), `fixture ${f.name}`);
    } else await peer.sendRaw(f.raw!, `fixture ${f.name}`);
  }
  if (f.message?.type === 'error') {
    const quiet = await expectNothing(
      peer,
      mark,
      (r) => r.msg.type === 'error' && (id === undefined || r.msg.reply_to === id),
      'nothing may answer an error',
    );
    return quiet ? `${f.name}: ${quiet.detail}` : undefined;
  }
  const r = await peer.waitFor(
    (x) => x.index >= mark && x.msg.type === 'error' && (id === undefined || x.msg.reply_to === id || x.msg.reply_to === undefined),
    `the error for fixture ${f.name}`,
  );
  if (!r.ok) return `${f.name}: ${r.outcome.detail}`;
  const code = r.value.msg.payload?.code;
  const want = wanted(f, inSession);
  if (want.includes(code)) return undefined;
  // An agent may end a session after repeated bad input: then reopen and go on.
  if (code === 'PROTOCOL_VIOLATION' && r.value.msg.payload?.fatal === true && r.value.msg.reply_to === undefined) return undefined;
  return `${f.name}: expected ${want.join(' or ')} (${f.expect.why ?? ''}), got ${describeMessage(r.value.msg)}`;
}

function verdict(problems: string[], n: number): Outcome {
  if (n === 0) return skipped('no fixtures found under fixtures/invalid/');
  if (problems.length === 0) return pass(`${n} invalid fixtures, each refused with the expected error`);
  return fail(
    `${problems.length} of ${n} invalid fixtures got the wrong answer; first: ${problems[0]}`,
    'the error each .expect.json names',
    problems.slice(0, 5).join(' | '),
  );
}

export const REQUESTER_TYPES = [
  'task.request',
  'task.cancel',
  'task.resume',
  'plan.decision',
  'shutdown.request',
  'session.farewell',
  'pong',
  'error',
];

export function fixtureCase(
  id: string,
  title: string,
  folders: string[],
  mode: 'session' | 'fresh' | 'acked',
  requirements: string[],
): Case {
  return defineCase({
    id: `core.fixtures.${id}`,
    title,
    profile: 'core',
    requirements: ['TAP-ERR-010', ...requirements],
    budgetMs: 60_000,
    run: async (ctx) => {
      const fixtures = folders.flatMap(loadFixtures);
      const open = async () => {
        const peer = need(await ctx.connect());
        if (mode === 'session') need(await handshake(peer));
        if (mode === 'acked') need(await handshake(peer, { stopAfterAck: true }));
        return peer;
      };
      const { problems, replayed } = await replay(ctx, fixtures, open, mode !== 'fresh', mode !== 'session');
      return verdict(problems, replayed);
    },
  });
}
