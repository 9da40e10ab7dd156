/** Steps that several case files of the nats profile share. */
import type { CaseContext } from '../../context.ts';
import { targetTls } from '../../target.ts';
import { connect, headers as natsHeaders } from '../../../reference/transports/nats/client.ts';
import { Header, newConnectionId, openSubject, parseNatsUrl, subjectsOf } from '../../../reference/transports/nats/index.ts';
import { buildSubject, Wildcard } from '../../../reference/transports/nats/subjects.ts';
import { natsClientOptions } from '../../../reference/transports/nats/url.ts';
import { sleep } from '../../peer.ts';
import type { Outcome } from '../../verdict.ts';
import { check, show, verdictOf } from '../kit.ts';

export const NATS = { binding: 'nats' as const };

/** An open request the harness sends itself: the connection id it asks for, and its Tap-Keepalive-Ms (undefined: no header). */
export interface OpenRequest {
  connection: string;
  keepaliveMs: string | undefined;
}

/**
 * Sends open requests of its own to the agent under test, over a NATS connection with the run's
 * credentials and TLS; resolves with each Tap-Open verdict. With `release`, a connection the agent
 * granted is closed at once, as the harness does not use it (spec: bindings-nats#closing).
 */
export async function openVerdicts(ctx: CaseContext, requests: readonly OpenRequest[], release = false): Promise<string[]> {
  const address = parseNatsUrl((ctx.env.target as { url: string }).url);
  const nc = await connect(natsClientOptions(address, targetTls(ctx.env.target)));
  try {
    const out: string[] = [];
    for (const { connection, keepaliveMs } of requests) {
      const h = natsHeaders();
      h.set(Header.CONNECTION, connection);
      if (keepaliveMs !== undefined) h.set(Header.KEEPALIVE_MS, keepaliveMs);
      const reply = await nc.request(openSubject('tap', address.agentId!), new Uint8Array(0), { headers: h, timeout: ctx.scaled(5000) });
      const verdict = reply.headers?.get(Header.OPEN) ?? '';
      out.push(verdict);
      if (release && verdict === 'ok') {
        const close = natsHeaders();
        close.set(Header.SEQ, '1');
        close.set(Header.CONTROL, 'close');
        close.set(Header.CLOSE_CODE, '1000');
        nc.publish(subjectsOf('tap', address.agentId!, connection).toAgent, 'tap-conform checked the keepalive range', { headers: close });
      }
    }
    if (release) await nc.flush();
    return out;
  } finally {
    await nc.close();
  }
}

/** A message the agent published on the out subject of a connection the harness opened by hand. */
export interface SeenMessage {
  /** Its Tap-Seq header, as written. */
  seq: string;
  /** Its Tap-Control header ('' for a frame). */
  control: string;
  /** Its Tap-Close-Code header ('' unless a close). */
  code: string;
  /** When it arrived (ms since the epoch). */
  at: number;
}

/** A connection the harness opened by hand, without the transport's numbering or keepalives. */
export interface RawConnection {
  /** The Tap-Open verdict ('ok', a close code, or '' for none). */
  verdict: string;
  /** The Tap-Keepalive-Ms the agent announced, as written ('' for none). */
  announced: string;
  /** When the open reply arrived (ms since the epoch). */
  openedAt: number;
  /** Every message the agent published on the out subject so far, in order. */
  seen: SeenMessage[];
  /** Publishes a control message on the in subject with the given Tap-Seq. */
  control(kind: 'keepalive' | 'close', seq: number, code?: number): Promise<void>;
  /** Closes the harness's NATS connection (after a close control message, when the connection is still open). */
  end(seq?: number): Promise<void>;
}

/**
 * Opens a connection by hand with a 1 000 ms keepalive and keeps it alive with keepalives numbered
 * 1, 2, 3 … every 700 ms (within the 1 000 ms announced) for 2.5 of the agent's intervals, at most
 * `limitMs`; then `judge` reads what the agent published, and the connection is ended. A refused
 * open is judged here (spec: bindings-nats#frames).
 */
export async function keepaliveExchange(
  ctx: CaseContext,
  limitMs: number,
  judge: (raw: RawConnection, o: { started: number; every: number }) => Outcome,
): Promise<Outcome> {
  const raw = await openRaw(ctx, '1000');
  let seq = 0;
  try {
    if (raw.verdict !== 'ok') return verdictOf('', check(false, 'the agent refused a plain open request', 'ok', show(raw.verdict)));
    const every = Number(raw.announced) || 1000;
    const started = Date.now();
    while (Date.now() - started < Math.min(2.5 * every, limitMs)) {
      await raw.control('keepalive', ++seq);
      await sleep(700);
    }
    return judge(raw, { started, every });
  } finally {
    await raw.end(seq + 1);
  }
}

/**
 * Opens a connection to the agent under test by hand: it subscribes to the out subject first
 * (TAP-NATS-002), sends the open request with `keepaliveMs` (undefined: no header) and records
 * every message the agent publishes there, so that a case can read the agent's numbering and
 * keepalives without a transport of its own in between.
 */
export async function openRaw(ctx: CaseContext, keepaliveMs: string | undefined): Promise<RawConnection> {
  const address = parseNatsUrl((ctx.env.target as { url: string }).url);
  const agentId = address.agentId!;
  const nc = await connect(natsClientOptions(address, targetTls(ctx.env.target)));
  const id = newConnectionId();
  const subjects = subjectsOf('tap', agentId, id);
  const seen: SeenMessage[] = [];
  nc.subscribe(subjects.toRequester, {
    callback: (err, msg) => {
      if (err) return;
      const get = (name: string): string => msg.headers?.get(name) ?? '';
      seen.push({ seq: get(Header.SEQ), control: get(Header.CONTROL), code: get(Header.CLOSE_CODE), at: Date.now() });
    },
  });
  await nc.flush();
  const h = natsHeaders();
  h.set(Header.CONNECTION, id);
  if (keepaliveMs !== undefined) h.set(Header.KEEPALIVE_MS, keepaliveMs);
  let reply: { headers?: { get(name: string): string } };
  try {
    reply = await nc.request(openSubject('tap', agentId), new Uint8Array(0), { headers: h, timeout: ctx.scaled(5000) });
  } catch (err) {
    await nc.close();
    throw err;
  }
  const control = async (kind: 'keepalive' | 'close', seq: number, code?: number): Promise<void> => {
    const c = natsHeaders();
    c.set(Header.SEQ, String(seq));
    c.set(Header.CONTROL, kind);
    if (code !== undefined) c.set(Header.CLOSE_CODE, String(code));
    nc.publish(subjects.toAgent, kind === 'close' ? 'tap-conform is done with the connection' : new Uint8Array(0), { headers: c });
    await nc.flush();
  };
  return {
    verdict: reply.headers?.get(Header.OPEN) ?? '',
    announced: reply.headers?.get(Header.KEEPALIVE_MS) ?? '',
    openedAt: Date.now(),
    seen,
    control,
    async end(seq) {
      if (seq !== undefined && !seen.some((m) => m.control === 'close')) await control('close', seq, 1000).catch(() => {});
      await nc.close();
    },
  };
}

/** The queue group every agent subscribes to its open subject in (spec: bindings-nats#opening, TAP-NATS-048). */
export const OPEN_QUEUE_GROUP = 'tap-agents';

/** How the open requests of `queueGroupCount` were shared out. */
export interface QueueGroupCount {
  sent: number;
  /** Requests that reached the harness's own member of the group. */
  member: number;
  /** Replies the agent sent. */
  agent: number;
}

/**
 * Joins the open subject's queue group `tap-agents` with a member of the harness's own, sends `n`
 * open requests and counts who got each: with the agent in the group every request reaches one
 * member, so member + agent is n; an agent in another group (or none) gets every request besides.
 * The harness's member refuses with 1013; a connection the agent granted is closed at once.
 */
export async function queueGroupCount(ctx: CaseContext, n: number): Promise<QueueGroupCount> {
  const address = parseNatsUrl((ctx.env.target as { url: string }).url);
  const agentId = address.agentId!;
  const options = natsClientOptions(address, targetTls(ctx.env.target));
  const nc = await connect(options);
  const MARK = 'Tap-Conform-Member';
  let member = 0;
  let agent = 0;
  try {
    nc.subscribe(openSubject('tap', agentId), {
      queue: OPEN_QUEUE_GROUP,
      callback: (err, msg) => {
        if (err) return;
        member++;
        const h = natsHeaders();
        h.set(Header.OPEN, '1013');
        h.set(MARK, '1');
        msg.respond('tap-conform counts the members of the queue group', { headers: h });
      },
    });
    await nc.flush();
    const granted: string[] = [];
    const inbox = options.inboxPrefix ?? '_INBOX';
    const replies = buildSubject(inbox, 'tap-conform', { token: newConnectionId(), what: 'reply token' });
    nc.subscribe(buildSubject(replies, Wildcard.TOKEN), {
      callback: (err, reply) => {
        if (err || reply.headers?.get(MARK)) return;
        agent++;
        if (reply.headers?.get(Header.OPEN) === 'ok') granted.push(reply.subject.slice(replies.length + 1));
      },
    });
    await nc.flush();
    for (let i = 0; i < n; i++) {
      const id = newConnectionId();
      const h = natsHeaders();
      h.set(Header.CONNECTION, id);
      h.set(Header.KEEPALIVE_MS, '60000');
      nc.publish(openSubject('tap', agentId), new Uint8Array(0), {
        headers: h,
        reply: buildSubject(replies, { token: id, what: 'connection id' }),
      });
    }
    await nc.flush();
    // Every request answered once, then a while for second copies; or the bound.
    const bound = Date.now() + ctx.scaled(10_000);
    while (member + agent < n && Date.now() < bound) await sleep(50);
    await sleep(ctx.scaled(1000));
    const close = natsHeaders();
    close.set(Header.SEQ, '1');
    close.set(Header.CONTROL, 'close');
    close.set(Header.CLOSE_CODE, '1000');
    for (const id of granted) nc.publish(subjectsOf('tap', agentId, id).toAgent, 'tap-conform counted the queue group', { headers: close });
    await nc.flush();
    return { sent: n, member, agent };
  } finally {
    await nc.close();
  }
}
