import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent } from './agent.ts';
import { JOURNAL_FILE, type JournalIo, type JournalOptions } from './journal.ts';
import { withConformanceCapabilities } from './conformance-capabilities.ts';
import { agentCard, expectCleanHistories, TestPeer } from './peer.testkit.ts';

afterEach(expectCleanHistories);

const dirs: string[] = [];
function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tap-journal-bounds-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Small bounds, so that a test reaches them with little traffic. */
const SMALL: JournalOptions = { compactBytes: 64 * 1024, maxTaskBytes: 16 * 1024, readChunkBytes: 4096 };

function durableAgent(dir: string, journal: JournalOptions = SMALL) {
  return createAgent({ card: agentCard(), capabilities: withConformanceCapabilities(), stateDir: dir, logger: () => {}, journal });
}

/** A copy of the journal as it is now: the state a crash at this instant would leave. */
function crashImage(dir: string): string {
  const image = stateDir();
  copyFileSync(join(dir, JOURNAL_FILE), join(image, JOURNAL_FILE));
  return image;
}

/** A peer on `agent` that resumes the session `old` had before the crash, so it sees that session's tasks. */
async function resumed(agent: ReturnType<typeof durableAgent>, old: TestPeer): Promise<TestPeer> {
  const peer = new TestPeer(agent);
  const init = peer.init({ resume: { session_id: old.sessionId, resume_token: old.resumeToken, tasks: [] } });
  const ack = await peer.reply(init.message_id);
  expect(ack.payload).toMatchObject({ resumed: true });
  peer.sessionId = ack.payload.session_id;
  peer.resumeToken = ack.payload.resume_token;
  const ready = peer.send({ type: 'handshake.ready', payload: { params: ack.payload.params } });
  await peer.reply(ready.message_id);
  return peer;
}

const journalSize = (dir: string): number => statSync(join(dir, JOURNAL_FILE)).size;

/** A disk that can be filled: while `full`, every write stores half its bytes and then fails with ENOSPC. */
function fillableDisk(): { io: Partial<JournalIo>; full: boolean } {
  const disk = {
    full: false,
    io: {
      write: (fd: number, buffer: Uint8Array, offset: number, length: number, position: number | null): number => {
        if (!disk.full) return writeSync(fd, buffer, offset, length, position);
        writeSync(fd, buffer, offset, Math.ceil(length / 2), position);
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    } as Partial<JournalIo>,
  };
  return disk;
}

describe('journal bounds (spec: tasks#journal)', () => {
  it('compacts while running, so stream tasks far past the bound leave a journal within it (spec: tasks#journal)', async () => {
    const dir = stateDir();
    const agent = durableAgent(dir);
    const a = new TestPeer(agent);
    await a.handshake();
    for (let i = 0; i < 3; i++) {
      a.request(`big${i}`, 'tap.test.stream', { count: 100, chunk: 'z'.repeat(4000) });
      expect((await a.result(`big${i}`)).payload).toEqual({ status: 'completed', output: { count: 100 } });
    }
    // 3 × 100 events of 4 KB were journaled (over 1.2 MB); each task keeps at most 16 KB after compaction.
    await new Promise((r) => setImmediate(r));
    expect(journalSize(dir)).toBeLessThan(2 * (3 * 16 * 1024 + 16 * 1024) + 64 * 1024);
    const image = crashImage(dir);
    await agent.shutdown();

    const again = durableAgent(image);
    const b = await resumed(again, a);
    const status = b.send({ type: 'task.status', task_id: 'big2', payload: {} });
    expect(await b.reply(status.message_id)).toMatchObject({ type: 'task.snapshot', payload: { state: 'completed' } });
    await again.shutdown();
  });

  it('restarts from a journal far beyond its bounds, read line by line, and compacts it (spec: tasks#journal)', async () => {
    const dir = stateDir();
    const path = join(dir, JOURNAL_FILE);
    // 5 MB of records, some longer than a read chunk, one longer than the longest record allowed.
    const lines: string[] = [];
    for (let i = 0; i < 2500; i++) lines.push(JSON.stringify({ t: 'kv', key: 'tap.test.counter:big', value: i, pad: 'p'.repeat(2000) }));
    lines.splice(1000, 0, JSON.stringify({ t: 'kv', key: 'junk', value: 'j'.repeat(300 * 1024) }));
    writeFileSync(path, `${lines.join('\n')}\n`);
    expect(journalSize(dir)).toBeGreaterThan(5_000_000);

    const agent = durableAgent(dir, { ...SMALL, maxRecordBytes: 256 * 1024 });
    expect(journalSize(dir)).toBeLessThan(64 * 1024);
    const a = new TestPeer(agent);
    await a.handshake();
    a.request('c1', 'tap.test.counter', { key: 'big' });
    expect((await a.result('c1')).payload.output).toEqual({ key: 'big', count: 2500 });
    await agent.shutdown();
  });

  it('starts on a full disk: compaction needs room for a copy, so it is skipped and the journal kept (spec: tasks#journal)', async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake();
    a.request('c1', 'tap.test.counter', { key: 'full' }, {}, { idempotency_key: 'once' });
    await a.result('c1');
    const image = crashImage(dir);
    await first.shutdown();
    const before = readFileSync(join(image, JOURNAL_FILE), 'utf8');

    const disk = fillableDisk();
    disk.full = true;
    const second = durableAgent(image, { ...SMALL, io: disk.io });
    expect(readFileSync(join(image, JOURNAL_FILE), 'utf8')).toBe(before);
    disk.full = false; // the agent started without room; space comes back later
    const b = await resumed(second, a);
    const retry = b.request('c2', 'tap.test.counter', { key: 'full' }, {}, { idempotency_key: 'once' });
    expect(await b.reply(retry.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'c1' });
    b.request('c3', 'tap.test.counter', { key: 'full' });
    expect((await b.result('c3')).payload.output).toEqual({ key: 'full', count: 2 });
    await second.shutdown();
  });

  it('refuses a task it could not journal, cuts off the torn line, and keeps the next task across a restart (spec: tasks#journal)', async () => {
    const dir = stateDir();
    const disk = fillableDisk();
    const first = durableAgent(dir, { ...SMALL, io: disk.io });
    const a = new TestPeer(first);
    await a.handshake();
    disk.full = true;
    const refused = a.request('lost', 'tap.test.counter', { key: 'k' }, {}, { idempotency_key: 'lost' });
    expect(await a.reply(refused.message_id)).toMatchObject({
      type: 'error',
      task_id: 'lost',
      payload: { code: 'INTERNAL_ERROR', retryable: true, details: { durable: false } },
    });
    expect(readFileSync(join(dir, JOURNAL_FILE), 'utf8').endsWith('\n')).toBe(true);
    disk.full = false; // space comes back; the agent keeps running
    const status = a.send({ type: 'task.status', task_id: 'lost', payload: {} });
    expect(await a.reply(status.message_id)).toMatchObject({ type: 'error', payload: { code: 'UNKNOWN_TASK' } });
    a.request('after', 'tap.test.counter', { key: 'k' }, {}, { idempotency_key: 'once' });
    expect((await a.result('after')).payload.output).toEqual({ key: 'k', count: 1 });
    const image = crashImage(dir);
    await first.shutdown();

    const second = durableAgent(image);
    const b = await resumed(second, a);
    const known = b.send({ type: 'task.status', task_id: 'after', payload: {} });
    expect(await b.reply(known.message_id)).toMatchObject({ type: 'task.snapshot', payload: { state: 'completed' } });
    const retry = b.request('after-2', 'tap.test.counter', { key: 'k' }, {}, { idempotency_key: 'once' });
    expect(await b.reply(retry.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'after' });
    b.request('other', 'tap.test.counter', { key: 'k' });
    expect((await b.result('other')).payload.output).toEqual({ key: 'k', count: 2 });
    await second.shutdown();
  });

  it('drops a torn last line at start-up and truncates the file there before appending (spec: tasks#journal)', async () => {
    const dir = stateDir();
    const first = durableAgent(dir);
    const a = new TestPeer(first);
    await a.handshake();
    a.request('c1', 'tap.test.counter', { key: 't' });
    await a.result('c1');
    const image = crashImage(dir);
    await first.shutdown();
    const path = join(image, JOURNAL_FILE);
    const whole = journalSize(image);
    appendFileSync(path, '{"t":"task","principal":"x","task_id":"half","session_id":"s","capa');

    // No room for a compacted copy: only cutting the torn line off keeps the next record whole.
    const disk = fillableDisk();
    disk.full = true;
    const second = durableAgent(image, { ...SMALL, io: disk.io });
    disk.full = false;
    expect(journalSize(image)).toBe(whole);
    const b = new TestPeer(second);
    await b.handshake();
    b.request('next', 'tap.test.counter', { key: 't' }, {}, { idempotency_key: 'N' });
    expect((await b.result('next')).payload.output).toEqual({ key: 't', count: 2 });
    const text = readFileSync(path, 'utf8');
    expect(text.slice(0, whole)).not.toContain('"half"');
    for (const line of text.trimEnd().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
    const crash = crashImage(image);
    await second.shutdown();

    const third = durableAgent(crash);
    const c = await resumed(third, b);
    const retry = c.request('next-2', 'tap.test.counter', { key: 't' }, {}, { idempotency_key: 'N' });
    expect(await c.reply(retry.message_id)).toMatchObject({ type: 'task.snapshot', task_id: 'next' });
    c.request('check', 'tap.test.counter', { key: 't' });
    expect((await c.result('check')).payload.output).toEqual({ key: 't', count: 3 });
    await third.shutdown();
  });

  it('refuses new tasks with BUSY once a principal holds its bound of live journal bytes (spec: tasks#journal)', async () => {
    const dir = stateDir();
    const agent = durableAgent(dir, { ...SMALL, maxPrincipalBytes: 8 * 1024 });
    const a = new TestPeer(agent);
    await a.handshake();
    let refusal: Record<string, unknown> | undefined;
    for (let i = 0; i < 50 && !refusal; i++) {
      const sent = a.request(`t${i}`, 'tap.test.echo', { pad: 'e'.repeat(500) });
      const reply = await a.reply(sent.message_id);
      if (reply.type === 'error') refusal = reply.payload;
      else await a.result(`t${i}`);
    }
    expect(refusal).toMatchObject({ code: 'BUSY', retryable: true, details: { scope: 'journal', limit: 8 * 1024 } });
    // Another principal is not held back by the first one's tasks.
    const b = new TestPeer(agent);
    await b.handshake();
    b.request('other', 'tap.test.echo', { pad: 'x' });
    expect((await b.result('other')).payload.status).toBe('completed');
    await agent.shutdown();
  });
});
