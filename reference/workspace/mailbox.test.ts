/** Mailboxes: one file per message, claimed by rename, deduplicated durably, in order per sender (spec: bindings-workspace#mailboxes). */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAgent, withConformanceCapabilities } from '../agent/index.ts';
import { connect } from '../client/index.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { FileDedupStore, MailboxReader, MailboxWriter, createMailboxTransport, serveMailboxes } from './index.ts';
import { mailboxFileName } from './mailbox-writer.ts';
import { waitFor, cleanupAfterEach } from './workspace.testkit.ts';

const { cleanups, root } = cleanupAfterEach();

const decode = (bytes: Uint8Array) => JSON.parse(Buffer.from(bytes).toString('utf8')) as { payload: { n: number } };

describe('mailbox writer and reader (spec: bindings-workspace#mailboxes)', () => {
  it('numbers files from 1 with twenty digits, persists .seq first, and resumes numbering after a restart', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'agent-b', 'agent-a');
    expect(await w.send('{"n":1}')).toBe(1);
    expect(await w.send('{"n":2}')).toBe(2);
    expect((await fsp.readdir(w.dir)).sort()).toEqual(['.seq', mailboxFileName(1), mailboxFileName(2)]);
    expect(mailboxFileName(2)).toBe('00000000000000000002.tap.json');
    expect(await fsp.readFile(join(w.dir, '.seq'), 'utf8')).toBe('2\n');
    const again = new MailboxWriter(dir, 'agent-b', 'agent-a');
    expect(await again.send('{"n":3}')).toBe(3);
    expect(() => new MailboxWriter(dir, '../etc', 'agent-a')).toThrow(/not a valid agent id/);
  });

  it('delivers in sequence order, files left in .inflight/ first, and never twice once recorded', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'reader', 'sender');
    for (let n = 1; n <= 5; n++) await w.send(JSON.stringify({ message_id: `m${n}`, payload: { n } }));
    // A reader that stopped after claiming message 1 left it in .inflight/.
    await fsp.mkdir(join(w.dir, '.inflight'));
    await fsp.rename(join(w.dir, mailboxFileName(1)), join(w.dir, '.inflight', mailboxFileName(1)));
    // ... and one that recorded message 2 but stopped before deleting it.
    await fsp.rename(join(w.dir, mailboxFileName(2)), join(w.dir, '.inflight', mailboxFileName(2)));
    const store = await FileDedupStore.open(join(w.dir, '.dedup'));
    await store.add('2:m2');

    const got: Array<{ n: number; redelivered: boolean }> = [];
    const reader = new MailboxReader({
      root: dir,
      to: 'reader',
      from: 'sender',
      deliver: (f, info) => void got.push({ n: decode(f.bytes).payload.n, redelivered: info.redelivered }),
    });
    await reader.start();
    cleanups.push(() => reader.stop());
    await waitFor(() => got.length === 4, 5000, 'four deliveries');
    expect(got).toEqual([
      { n: 1, redelivered: true },
      { n: 3, redelivered: false },
      { n: 4, redelivered: false },
      { n: 5, redelivered: false },
    ]);
    await waitFor(async () => (await fsp.readdir(join(w.dir, '.inflight'))).length === 0, 2000, 'an empty .inflight/');
    const recorded = await FileDedupStore.open(join(w.dir, '.dedup'));
    for (const key of ['1:m1', '2:m2', '3:m3', '4:m4', '5:m5']) expect(recorded.has(key), key).toBe(true);
  });

  it('delivers a repeated message_id in a new file again: only a redelivery of the same file is a duplicate', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'reader', 'sender');
    await w.send(JSON.stringify({ message_id: 'same', payload: { n: 1 } }));
    await w.send(JSON.stringify({ message_id: 'same', payload: { n: 2 } }));
    const got: number[] = [];
    const reader = new MailboxReader({ root: dir, to: 'reader', from: 'sender', deliver: (f) => void got.push(decode(f.bytes).payload.n) });
    await reader.start();
    cleanups.push(() => reader.stop());
    await waitFor(() => got.length === 2, 5000, 'two deliveries');
    expect(got).toEqual([1, 2]);
  });

  it('keeps a file whose delivery failed and delivers it again', async () => {
    const dir = await root();
    const w = new MailboxWriter(dir, 'reader', 'sender');
    await w.send(JSON.stringify({ message_id: 'x', payload: { n: 1 } }));
    let tries = 0;
    const reader = new MailboxReader({
      root: dir,
      to: 'reader',
      from: 'sender',
      pollMs: 20,
      deliver: () => {
        tries += 1;
        if (tries === 1) throw new Error('the effect failed');
      },
    });
    await reader.start();
    cleanups.push(() => reader.stop());
    await waitFor(() => tries === 2, 5000, 'a second try');
  });
});

const agentCard: AgentCard = {
  agent_id: 'mail-agent',
  name: 'Mailbox agent',
  description: 'Serves the conformance capabilities over mailboxes.',
  capabilities: [],
  limits: { max_concurrent_tasks: 4, max_task_seconds: 60, max_message_bytes: 65536 },
};

describe('the mailbox transport (spec: bindings-workspace#mailboxes)', () => {
  it('runs the whole message protocol over files: handshake, tasks with streams, farewell', async () => {
    const dir = await root();
    const agent = createAgent({ card: agentCard, capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => agent.shutdown());
    const server = serveMailboxes(agent, { root: dir, agentId: 'mail-agent', pollMs: 50 });
    cleanups.push(() => server.close());
    const transport = createMailboxTransport({ root: dir, self: 'mail-requester', peer: 'mail-agent', pollMs: 50 });
    const client = await connect(transport, { agentId: 'mail-requester', target: 'mail-agent', requires: ['tap.test.echo'] });
    cleanups.push(() => client.close());
    expect(await client.submit('tap.test.echo', { over: 'files' }).result).toEqual({ status: 'completed', output: { over: 'files' } });
    const stream = client.submit('tap.test.stream', { count: 3 });
    expect(await stream.result).toEqual({ status: 'completed', output: { count: 3 } });
    expect(server.peers()).toEqual(['mail-requester']);
    await client.close();
    // Both directions are plain TAP messages, one per file, in the two mailboxes.
    const sent = JSON.parse(await fsp.readFile(join(dir, 'mailboxes', 'mail-requester', 'mail-agent', '.seq'), 'utf8')) as number;
    expect(sent).toBeGreaterThan(5);
    await waitFor(() => server.peers().length === 0, 5000, 'the session to end');
  });

  it('answers a malformed file like any malformed frame', async () => {
    const dir = await root();
    const agent = createAgent({ card: agentCard, capabilities: withConformanceCapabilities(), logger: () => {} });
    cleanups.push(() => agent.shutdown());
    const server = serveMailboxes(agent, { root: dir, agentId: 'mail-agent', pollMs: 50 });
    cleanups.push(() => server.close());
    const t = createMailboxTransport({ root: dir, self: 'prober', peer: 'mail-agent', pollMs: 50 });
    const got: string[] = [];
    t.onmessage = (f) => void got.push(Buffer.from(f.bytes).toString('utf8'));
    await t.start();
    cleanups.push(() => t.close());
    await t.sendRaw(new TextEncoder().encode('{"not": "closed"'));
    await waitFor(() => got.length > 0, 5000, 'an answer');
    expect(JSON.parse(got[0]!)).toMatchObject({ type: 'error', payload: { code: 'MALFORMED_MESSAGE' } });
  });
});
