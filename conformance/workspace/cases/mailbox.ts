/**
 * The agent as a mailbox reader and writer: files of a sender taken in ascending sequence order,
 * those left in .inflight/ first, each deleted once processed; a message presented again after it
 * was processed has no second effect; the agent numbers its own files from 1 with its counter in
 * .seq, and writes only as itself (spec: bindings-workspace#mailboxes).
 */
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { check, need, show, verdictOf } from '../../cases/kit.ts';
import type { CaseContext } from '../../context.ts';
import { Peer } from '../../peer.ts';
import { SessionState, type Wire } from '../../session-state.ts';
import { fail, type Outcome } from '../../verdict.ts';
import { mailboxFileName } from '../../../reference/workspace/mailbox-writer.ts';
import { HarnessMailbox } from '../mailbox-connection.ts';
import { stop, wsCase } from '../kit.ts';
import { listDir, poll, readOrNull } from '../observe.ts';
import type { WorkspaceRun } from '../workspace-run.ts';

/** A peer whose first messages are files the harness lays out itself before the agent can see any. */
interface Staged {
  peer: Peer;
  transport: HarnessMailbox;
  /** The mailbox the harness writes: mailboxes/<agent>/<sender>/. */
  dir: string;
}

/** Opens a peer on a fresh sender id without starting it; the mailbox does not exist yet. */
function stagedPeer(ctx: CaseContext, run: WorkspaceRun): Staged {
  const sender = run.mail.nextSender();
  const transport = new HarnessMailbox(run.root, sender, run.agentId);
  const peer = new Peer({
    transport,
    binding: 'websocket',
    state: new SessionState(ctx.env.selfId, ctx.env.probe.agentId),
    transcript: ctx.transcript,
    findings: ctx.findings,
    ids: ctx.ids,
    conn: 90 + ctx.peers.length,
    stepTimeoutMs: ctx.env.stepTimeoutMs,
    startupMs: ctx.env.startupMs,
    timeScale: ctx.env.timeScale,
  });
  ctx.peers.push(peer);
  ctx.connections.push({ transport });
  return { peer, transport, dir: join(run.root, 'mailboxes', run.agentId, sender) };
}

/**
 * Lays out a mailbox in a hidden directory and renames it into place, so that all its files
 * appear to the agent at once: `files` maps sequence numbers to messages, `inflight` the ones
 * left in .inflight/ as by a reader that stopped.
 */
async function layOut(ctx: CaseContext, s: Staged, files: Map<number, Wire>, inflight: Set<number>): Promise<void> {
  const stage = join(s.dir, '..', `.tmp-stage-${s.transport.self}`);
  await fsp.mkdir(join(stage, '.inflight'), { recursive: true });
  for (const [seq, msg] of files) {
    const text = JSON.stringify(msg);
    await fsp.writeFile(join(stage, inflight.has(seq) ? '.inflight' : '', mailboxFileName(seq)), text);
    ctx.transcript.add({
      conn: s.peer.conn,
      dir: 'out',
      text,
      bytes: Buffer.byteLength(text),
      type: msg.type,
      flags: [`mailbox file ${seq}${inflight.has(seq) ? ' in .inflight/' : ''}`],
    });
  }
  await fsp.writeFile(join(stage, '.seq'), `${Math.max(...files.keys())}\n`);
  await fsp.rename(stage, s.dir);
  await s.peer.start();
}

/** Waits for a reply to each message; FAIL naming the first without one. */
async function repliesTo(s: Staged, msgs: Wire[]): Promise<string[]> {
  const order: string[] = [];
  for (const m of msgs) {
    const r = need(await s.peer.reply(m));
    order.push(r.msg.reply_to!);
  }
  return s.peer.received
    .filter((r) => r.conn === s.peer.conn && msgs.some((m) => m.message_id === r.msg.reply_to) && !r.resent)
    .map((r) => r.msg.reply_to!);
}

/** Mailbox files (by name) present in a mailbox and its .inflight/. */
async function messageFiles(dir: string): Promise<string[]> {
  const names = [...(await listDir(dir)), ...(await listDir(join(dir, '.inflight'))).map((n) => `.inflight/${n}`)];
  return names.filter((n) => /(^|\/)\d{20}\.tap\.json$/.test(n));
}

export const mailboxCases = [
  wsCase({
    id: 'workspace.mailbox.order',
    title: 'Twenty messages that appear at once are processed in ascending sequence order',
    spec: 'bindings-workspace#mailboxes',
    requirements: ['TAP-WKS-031'],
    async run(ctx, run) {
      const s = stagedPeer(ctx, run);
      const pings = Array.from({ length: 20 }, () => s.peer.envelope('ping', {}));
      await layOut(ctx, s, new Map(pings.map((p, i) => [i + 1, p])), new Set());
      const order = await repliesTo(s, pings);
      const want = pings.map((p) => p.message_id);
      const at = order.findIndex((id, i) => id !== want[i]);
      return verdictOf(
        '20 pongs in the order of the files',
        check(
          at === -1,
          `the reply to file ${want.indexOf(order[at]!) + 1} came at position ${at + 1}: the files were not processed in sequence order`,
          'replies in file order 1, 2, 3, …',
          show(order.map((id) => want.indexOf(id) + 1)),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.mailbox.inflight-first',
    title: 'A file left in .inflight/ by a reader that stopped is processed first, and every processed file is deleted',
    spec: 'bindings-workspace#mailboxes',
    requirements: ['TAP-WKS-031', 'TAP-WKS-030'],
    async run(ctx, run) {
      const s = stagedPeer(ctx, run);
      const [a, b, c] = [s.peer.envelope('ping', {}), s.peer.envelope('ping', {}), s.peer.envelope('ping', {})];
      await layOut(
        ctx,
        s,
        new Map([
          [5, a!],
          [6, b!],
          [7, c!],
        ]),
        new Set([5]),
      );
      const order = await repliesTo(s, [a!, b!, c!]);
      const cleared = await poll(async () => ((await messageFiles(s.dir)).length === 0 ? true : null), ctx.scaled(2000), 50);
      const remaining = cleared ? [] : await messageFiles(s.dir);
      return verdictOf(
        'the file from .inflight/ came first, then 6 and 7; all deleted',
        check(
          order[0] === a!.message_id,
          'the file left in .inflight/ was not processed first',
          'the reply to file 5 (.inflight/) first',
          show(order.map((id) => [a!.message_id, b!.message_id, c!.message_id].indexOf(id) + 5)),
        ),
        check(
          order.length === 3 && order[1] === b!.message_id && order[2] === c!.message_id,
          'files 6 and 7 were not processed in order',
          '5, 6, 7',
          show(order),
        ),
        check(
          remaining.length === 0,
          `processed files are still in the mailbox: ${remaining.join(', ')}`,
          'each file deleted once processed',
          remaining.join(', '),
        ),
      );
    },
  }),

  wsCase({
    id: 'workspace.mailbox.redelivery',
    title: 'A message file presented again in .inflight/ after it was processed has no second effect',
    spec: 'bindings-workspace#mailboxes',
    requirements: ['TAP-WKS-032'],
    async run(ctx, run) {
      const peer = need(await ctx.session());
      const t = ctx.connectionOf(peer)!.transport as HarnessMailbox;
      const dir = join(run.root, 'mailboxes', run.agentId, t.self);
      const first = await peer.post('ping', {});
      const seq = t.lastSent;
      need(await peer.reply(first));
      const gone = await poll(
        async () =>
          (await messageFiles(dir)).includes(mailboxFileName(seq)) ||
          (await messageFiles(dir)).includes(`.inflight/${mailboxFileName(seq)}`)
            ? null
            : true,
        ctx.scaled(3000),
        20,
      );
      if (!gone) stop(fail(`file ${seq} was still in the mailbox after it was answered`, 'the file deleted once processed', 'still there'));
      // As if the reader had stopped between the effect and the deletion: the same file is back in .inflight/.
      await fsp.writeFile(join(dir, '.inflight', mailboxFileName(seq)), JSON.stringify(first));
      ctx.note(`file ${seq} (the ping ${first.message_id}) was put back into .inflight/`);
      need(await peer.barrier(300));
      const replies = peer.received.filter((r) => r.msg.reply_to === first.message_id);
      const fresh = replies.filter((r) => !r.resent);
      const still = await readOrNull(join(dir, '.inflight', mailboxFileName(seq)));
      return verdictOf(
        'the message presented again had no effect',
        check(
          fresh.length === 1,
          `the ping presented again was answered a second time (${fresh.length} different replies)`,
          'one effect per message',
          show(fresh.map((r) => r.msg.message_id)),
        ),
        check(still === null, 'the file presented again was left in .inflight/', 'deleted', 'still there'),
      );
    },
  }),

  wsCase({
    id: 'workspace.mailbox.sequence',
    title: 'The agent numbers its files from 1 upward and keeps its counter in .seq',
    spec: 'bindings-workspace#mailboxes',
    requirements: ['TAP-WKS-029'],
    async run(ctx, run) {
      const peer = need(await ctx.session());
      for (let i = 0; i < 3; i++) need(await peer.ping());
      const t = ctx.connectionOf(peer)!.transport as HarnessMailbox;
      const seqs = t.log.seqs;
      const text = (await readOrNull(join(run.root, 'mailboxes', t.self, run.agentId, '.seq')))?.toString('utf8') ?? null;
      const counter = text === null ? null : Number(/\d+/.exec(text)?.[0] ?? NaN);
      ctx.note(`files delivered: ${show(seqs)}; .seq holds ${show(text)}`);
      const problems: (Outcome | null)[] = [
        check(seqs[0] === 1, `the agent's first file in a new mailbox is number ${seqs[0]}`, '1', String(seqs[0])),
        check(
          seqs.every((n, i) => i === 0 || n > seqs[i - 1]!),
          "the agent's file numbers do not increase",
          'ascending numbers',
          show(seqs),
        ),
        check(
          counter !== null && Number.isSafeInteger(counter),
          `mailboxes/${t.self}/${run.agentId}/.seq ${text === null ? 'does not exist' : `holds no counter (${show(text)})`}`,
          'the sequence counter',
          show(text),
        ),
        check(
          counter === null || counter >= Math.max(...seqs),
          `.seq holds ${counter}, below the file number ${Math.max(...seqs)} already published`,
          `at least ${Math.max(...seqs)}`,
          String(counter),
        ),
      ];
      return verdictOf(`files ${seqs.join(', ')}; .seq ${counter}`, ...problems);
    },
  }),

  wsCase({
    id: 'workspace.mailbox.own-sender',
    title: 'The agent writes only into mailboxes whose sender directory is its own id, to peers that wrote to it',
    spec: 'bindings-workspace#mailboxes',
    requirements: ['TAP-WKS-028'],
    async run(ctx, run) {
      const peer = need(await ctx.session());
      need(await peer.ping());
      const root = join(run.root, 'mailboxes');
      const ours = run.mail.senders;
      const odd: string[] = [];
      for (const to of await listDir(root)) {
        if (to.startsWith('.')) continue;
        for (const from of await listDir(join(root, to))) {
          if (from.startsWith('.')) continue;
          const files = await messageFiles(join(root, to, from));
          const seq = (await readOrNull(join(root, to, from, '.seq'))) !== null;
          if (files.length === 0 && !seq) continue;
          if (from === run.agentId && ours.has(to)) continue;
          if (to === run.agentId && ours.has(from)) continue;
          odd.push(`mailboxes/${to}/${from}/`);
        }
      }
      return verdictOf(
        "every mailbox with messages is the agent's own or the harness's",
        check(
          odd.length === 0,
          `messages in mailboxes written neither by the harness nor by the agent as itself: ${odd.join(', ')}`,
          `mailboxes/<harness sender>/${run.agentId}/ only`,
          odd.join(', '),
        ),
      );
    },
  }),
];
