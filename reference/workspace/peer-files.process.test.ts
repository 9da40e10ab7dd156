/** Files a peer can write: no symlinks followed, no blocking on FIFOs or devices, unreadable entries set aside (spec: bindings-workspace#peer-files). */
import { execFileSync, spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { initWorkspace, submitTask } from './index.ts';
import { MailboxReader, MailboxWriter } from './index.ts';
import { HERE, runScript, stopChild, waitFor, type ScriptChild, cleanupAfterEach } from './workspace.testkit.ts';

const AGENT = join(HERE, 'agent.testkit.ts');
const TAPCTL = join(HERE, '..', '..', 'bin', 'tapctl.mjs');
const { cleanups, root } = cleanupAfterEach();

const mkfifo = (path: string): void => {
  execFileSync('mkfifo', [path]);
};

/** Starts a reader of mailboxes/reader/sender/ that collects the message ids it delivers. */
async function reader(dir: string): Promise<{ got: string[]; errors: string[] }> {
  const got: string[] = [];
  const errors: string[] = [];
  const r = new MailboxReader({
    root: dir,
    to: 'reader',
    from: 'sender',
    pollMs: 50,
    deliver: (frame) => {
      got.push((JSON.parse(Buffer.from(frame.bytes).toString('utf8')) as { message_id: string }).message_id);
    },
    onerror: (err) => errors.push(err.message),
  });
  cleanups.push(() => r.stop());
  await r.start();
  return { got, errors };
}

/** The entries set aside in `dir` with their reasons. */
async function setAside(dir: string): Promise<Array<{ name: string; reason: string }>> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const out: Array<{ name: string; reason: string }> = [];
  for (const n of names.filter((x) => x.endsWith('.reason.json'))) {
    out.push({ name: n.replace(/\.reason\.json$/, ''), reason: JSON.parse(await fsp.readFile(join(dir, n), 'utf8')).reason });
  }
  return out;
}

/** Runs tapctl with a time limit; the result, or 'hung'. */
function tapctl(args: string[], ms: number): Promise<{ code: number | null; stdout: string } | 'hung'> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TAPCTL, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
  });
}

describe('peer-writable files (spec: bindings-workspace#peer-files)', () => {
  it('sets a FIFO .dedup aside instead of blocking on it, and still delivers', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'reader', 'sender');
    await w.send(JSON.stringify({ message_id: 'm1' }));
    mkfifo(join(w.dir, '.dedup'));
    const { got, errors } = await reader(dir);
    await waitFor(() => got.length === 1, 5000, 'the message delivered');
    expect(got).toEqual(['m1']);
    expect((await fsp.lstat(join(w.dir, '.dedup'))).isFile()).toBe(true);
    expect(await setAside(join(w.dir, '.unreadable'))).toEqual([
      { name: expect.stringMatching(/^\.dedup\./), reason: expect.stringMatching(/FIFO/) },
    ]);
    expect(errors.join('\n')).toMatch(/\.dedup could not be used/);
  });

  it('never follows a .dedup symlink out of the workspace', async () => {
    const dir = await root();
    const outside = await root();
    const victim = join(outside, 'victim.txt');
    await fsp.writeFile(victim, 'keep me\n');
    const w = new MailboxWriter(dir, 'reader', 'sender');
    await fsp.mkdir(w.dir, { recursive: true });
    await fsp.symlink(victim, join(w.dir, '.dedup'));
    const { got } = await reader(dir);
    await w.send(JSON.stringify({ message_id: 'm1' }));
    await waitFor(() => got.length === 1, 5000, 'the message delivered');
    // The next add happens after delivery; give it a moment to land.
    await waitFor(async () => (await fsp.readFile(join(w.dir, '.dedup'), 'utf8').catch(() => '')).includes('m1'), 5000, 'the key recorded');
    expect(await fsp.readFile(victim, 'utf8')).toBe('keep me\n');
    expect((await fsp.lstat(join(w.dir, '.dedup'))).isSymbolicLink()).toBe(false);
    expect(await setAside(join(w.dir, '.unreadable'))).toHaveLength(1);
  });

  it('does not read a .dedup that leads to /dev/zero', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'reader', 'sender');
    await w.send(JSON.stringify({ message_id: 'm1' }));
    await fsp.symlink('/dev/zero', join(w.dir, '.dedup'));
    const { got } = await reader(dir);
    await waitFor(() => got.length === 1, 5000, 'the message delivered');
    expect(await setAside(join(w.dir, '.unreadable'))).toEqual([
      { name: expect.any(String), reason: expect.stringMatching(/symbolic link/) },
    ]);
  });

  it('sets an unreadable mailbox file aside instead of retrying it forever, and delivers the next', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'reader', 'sender');
    await w.send(JSON.stringify({ message_id: 'm1' }));
    await w.send(JSON.stringify({ message_id: 'm2' }));
    await fsp.rm(join(w.dir, '00000000000000000001.tap.json'));
    mkfifo(join(w.dir, '00000000000000000001.tap.json'));
    const { got } = await reader(dir);
    await waitFor(() => got.length === 1, 5000, 'the second message delivered');
    expect(got).toEqual(['m2']);
    expect(await setAside(join(w.dir, '.unreadable'))).toEqual([
      { name: expect.stringMatching(/^00000000000000000001\.tap\.json\./), reason: expect.stringMatching(/FIFO/) },
    ]);
  });

  it('dead-letters records in pending/ that are not readable regular files into tasks/unreadable/, and runs the rest', async () => {
    const dir = await root();
    const { workspace: ws } = await initWorkspace(dir, {});
    const pending = ws.paths.dir('pending');
    mkfifo(join(pending, 'fifo.tap.json'));
    await fsp.symlink('/etc/hostname', join(pending, 'link.tap.json'));
    await fsp.writeFile(join(pending, 'locked.tap.json'), '{}');
    await fsp.chmod(join(pending, 'locked.tap.json'), 0o000);
    const locked = await fsp.readFile(join(pending, 'locked.tap.json')).then(
      () => false,
      () => true,
    );
    await submitTask(ws, { task_id: 'good', next_phase: 'work', input: {} });
    const agent: ScriptChild = runScript(AGENT, ['--workspace', dir, '--agent-id', 'worker', '--poll-ms', '50']);
    cleanups.push(() => stopChild(agent, 2000));
    await waitFor(async () => (await fsp.readdir(ws.paths.dir('completed'))).includes('good.tap.json'), 20_000, 'the good task completed');
    const expected = locked ? 3 : 2; // a privileged user can read a file of mode 000
    await waitFor(async () => (await setAside(ws.paths.unreadable)).length === expected, 10_000, 'the unreadable records set aside');
    const reasons = Object.fromEntries((await setAside(ws.paths.unreadable)).map((e) => [e.name.split('.tap.json')[0], e.reason]));
    expect(reasons.fifo).toMatch(/not a regular file/);
    expect(reasons.link).toMatch(/symbolic link/);
    if (locked) expect(reasons.locked).toMatch(/EACCES/);
    // A privileged user's readable `{}` is an invalid record: it leaves pending/ too, on its own scan.
    await waitFor(async () => (await fsp.readdir(pending)).filter((n) => !n.startsWith('.')).length === 0, 10_000, 'pending/ emptied');
    expect(await stopChild(agent, 5000)).toBe(0);
  });

  it('tapctl workspace status and show answer, with FIFOs where records should be', async () => {
    const dir = await root();
    const { workspace: ws } = await initWorkspace(dir, {});
    await submitTask(ws, { task_id: 'good', next_phase: 'work', input: {} });
    mkfifo(join(ws.paths.dir('processing'), 'stuck@1.tap.json'));
    mkfifo(join(ws.paths.dir('failed'), 'dead.tap.json'));
    // Generous limits: a hang never ends, a slow machine does.
    const [status, shown] = await Promise.all([
      tapctl(['workspace', 'status', dir, '--json'], 90_000),
      tapctl(['workspace', 'show', dir, 'dead'], 90_000),
    ]);
    expect(status).toMatchObject({ code: 0 });
    expect(JSON.parse((status as { stdout: string }).stdout)).toMatchObject({ workspace: dir });
    expect(shown).not.toBe('hung');
  }, 120_000);
});
