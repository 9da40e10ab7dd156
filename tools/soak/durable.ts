/**
 * The soak's crash steps: SIGKILLs mid-task and a torn journal against a durable agent
 * (spec: tasks#durability, tasks#journal), tap-conform against hostile agents, and the count of
 * processes left behind (spec: conformance#processes).
 */
import { spawn } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Requester } from './attacks.ts';
import { CONFORM, ENV, figures, HOSTILE, notes, rand, ROOT, settings, sleep, stdioAgent, TAG } from './common.ts';

/** A stdio requester on a durable agent, resuming its session across restarts. */
export async function durableSession(dir: string, resume?: { session_id: string; resume_token: string }) {
  const agent = stdioAgent(['--state-dir', dir]);
  const r = new Requester(agent, 'soak.durable');
  await r.handshake(resume);
  return { agent, r, resume: { session_id: r.session!, resume_token: r.token! } };
}

/** SIGKILLs mid-task: every accepted task survives, no effect runs twice (spec: tasks#durability). */
export async function kills(dir: string): Promise<{ session_id: string; resume_token: string }> {
  const accepted: string[] = [];
  let resume: { session_id: string; resume_token: string } | undefined;
  for (let i = 0; i < settings.kills; i++) {
    const s = await durableSession(dir, resume);
    resume = s.resume;
    for (const id of accepted) {
      const st = await s.r.req('task.status', {}, { task_id: id });
      if (st.type !== 'task.snapshot') {
        figures.tasks_lost++;
        notes.push(`after kill ${i}: task ${id} is unknown`);
      }
    }
    const id = `k${i}`;
    const reply = await s.r.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'kills' } },
      { task_id: id, idempotency_key: id },
    );
    if (reply.type === 'task.accepted') {
      accepted.push(id);
      figures.tasks_accepted++;
    }
    await sleep(rand() * 30);
    s.agent.child.kill('SIGKILL');
    await s.agent.exited;
    figures.kills++;
  }
  const s = await durableSession(dir, resume);
  for (const id of accepted) {
    const retry = await s.r.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'kills' } },
      { task_id: `${id}-again`, idempotency_key: id },
    );
    if (retry.type === 'task.accepted') figures.effects_doubled++;
  }
  const last = await s.r.req('task.request', { capability: 'tap.test.counter', input: { key: 'kills' } }, { task_id: 'final' });
  if (last.type === 'task.accepted') {
    const res = await s.r.result('final');
    const count = (res.payload as { output?: { count?: number } }).output?.count ?? 0;
    if (count > accepted.length + 1) figures.effects_doubled += count - accepted.length - 1;
    notes.push(`kills: ${accepted.length} counter tasks accepted across ${settings.kills} SIGKILLs; the counter reads ${count}`);
  }
  s.agent.child.kill('SIGKILL');
  await s.agent.exited;
  return s.resume;
}

/** A torn last journal line: the restart drops it and the next task survives (spec: tasks#journal). */
export async function torn(dir: string, resume: { session_id: string; resume_token: string }): Promise<void> {
  appendFileSync(join(dir, 'journal.jsonl'), '{"t":"task","principal":"x","task_id":"torn","sess');
  const s = await durableSession(dir, resume);
  await s.r.req(
    'task.request',
    { capability: 'tap.test.counter', input: { key: 'torn' } },
    { task_id: 'after-torn', idempotency_key: 'torn' },
  );
  await s.r.result('after-torn');
  s.agent.child.kill('SIGKILL');
  await s.agent.exited;
  const t = await durableSession(dir, s.resume);
  const st = await t.r.req('task.status', {}, { task_id: 'after-torn' });
  if (st.type !== 'task.snapshot') figures.torn_journal_lost++;
  const retry = await t.r.req(
    'task.request',
    { capability: 'tap.test.counter', input: { key: 'torn' } },
    { task_id: 'again', idempotency_key: 'torn' },
  );
  if (retry.type === 'task.accepted') figures.effects_doubled++;
  t.agent.child.kill('SIGKILL');
  await t.agent.exited;
}

/** tap-conform against hostile agents: it must finish and leave nothing running (spec: conformance#processes). */
export async function hostile(): Promise<void> {
  for (const mode of settings.short ? ['daemon'] : ['forker', 'daemon', 'hang']) {
    const child = spawn(
      process.execPath,
      [CONFORM, '--time-scale', mode === 'hang' ? '0.1' : '1', '--only', 'core.handshake.complete', '--', 'node', HOSTILE, mode],
      { cwd: ROOT, env: { ...ENV, HOLD_MS: '120000' }, stdio: 'ignore' },
    );
    figures.harness_runs++;
    const code = await Promise.race([new Promise((r) => child.on('exit', r)), sleep(90_000).then(() => 'hung')]);
    if (code === 'hung') {
      figures.harness_hung++;
      child.kill('SIGKILL');
    }
    notes.push(`tap-conform on a hostile agent (${mode}): ${code === 'hung' ? 'hung' : `exit ${code}`}`);
  }
}

export function leftovers(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    if (Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`TAP_SOAK_TAG=${TAG}`)) out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}
