/**
 * The soak's attacks on a running agent: the fuzzer over stdio and WebSocket, and the eviction
 * and amplification attacks of another principal (spec: idempotency#keeping-records, limits#bounded-tables).
 */
import { randomBytes } from 'node:crypto';
import {
  batch,
  figures,
  fixtureFrames,
  generate,
  type Link,
  listening,
  notes,
  rssKb,
  settings,
  sleep,
  stdioAgent,
  wsLink,
} from './common.ts';

export async function fuzz(): Promise<void> {
  const fixtures = fixtureFrames();
  notes.push(`${fixtures.length} fixtures from fixtures/invalid in the mix`);
  const per = 25; // below the 32 refusals an agent must take before it may end a session (spec: limits#repeated-bad-input)
  const stdioShare = Math.max(per * 4, Math.floor(settings.frames / 10));
  // stdio: one agent process, replaced whenever it ends the session.
  let agent = stdioAgent();
  for (let sent = 0; sent < stdioShare; ) {
    if (agent.closed) {
      const code = await agent.exited;
      if (code !== 0 && code !== null) figures.crashes++;
      agent = stdioAgent();
    }
    const frames = Array.from({ length: per }, () => generate(fixtures));
    figures.unanswered_frames += await batch(agent, frames, 10_000);
    figures.peak_rss_kb = Math.max(figures.peak_rss_kb, rssKb(agent.pid));
    sent += per;
  }
  agent.close();
  const code = await Promise.race([agent.exited, sleep(10_000).then(() => 'hung' as const)]);
  if (code === 'hung') agent.child.kill('SIGKILL');
  // WebSocket: one server, a fresh connection per batch, many at once.
  const server = await listening();
  let serverDown = false;
  server.child.on('exit', () => (serverDown = true));
  const lanes = 8;
  let left = settings.frames - stdioShare;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (left > 0 && !serverDown) {
        left -= per;
        let link: Link;
        try {
          link = await wsLink(server.url);
        } catch {
          if (serverDown) return;
          continue;
        }
        figures.unanswered_frames += await batch(
          link,
          Array.from({ length: per }, () => generate(fixtures)),
          10_000,
        );
        link.close();
      }
    }),
  );
  figures.peak_rss_kb = Math.max(figures.peak_rss_kb, rssKb(server.child.pid));
  if (serverDown) {
    figures.crashes++;
    notes.push('the WebSocket server went down during the fuzz');
  }
  server.child.kill('SIGTERM');
}

/** A requester over WebSocket with the handshake and request helpers the attacks need. */
export class Requester {
  private n = 0;
  session?: string;
  token?: string;
  agent = '*';
  constructor(
    readonly link: Link,
    readonly id: string,
  ) {}
  msg(type: string, payload: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      protocol: 'tap/1.0',
      message_id: `${this.id}-${++this.n}-${randomBytes(3).toString('hex')}`,
      type,
      source: this.id,
      target: this.agent,
      timestamp: new Date().toISOString(),
      ...(this.session ? { session_id: this.session } : {}),
      payload,
      ...extra,
    };
  }
  async wait(pred: (m: Record<string, unknown>) => boolean, ms = 30_000): Promise<Record<string, unknown>> {
    const end = Date.now() + ms;
    for (;;) {
      const m = this.link.got.find(pred);
      if (m) return m;
      if (this.link.closed || Date.now() > end) throw new Error(`no reply (${this.link.closed ? 'closed' : 'timed out'})`);
      await sleep(2);
    }
  }
  async req(type: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const m = this.msg(type, payload, extra);
    this.link.send(Buffer.from(JSON.stringify(m)));
    return this.wait((x) => x.reply_to === m.message_id);
  }
  async handshake(resume?: { session_id: string; resume_token: string }): Promise<void> {
    const card = {
      agent_id: this.id,
      name: 'soak',
      description: 'soak requester',
      capabilities: [],
      limits: { max_concurrent_tasks: 64, max_task_seconds: 60, max_message_bytes: 4194304 },
    };
    const ack = await this.req('handshake.init', {
      versions: ['1.0'],
      agent: card,
      requires: [],
      params: { max_message_bytes: 4194304 },
      ...(resume ? { resume: { ...resume, tasks: [] } } : {}),
    });
    if (ack.type !== 'handshake.ack') throw new Error(`handshake refused: ${JSON.stringify(ack.payload)}`);
    const p = ack.payload as { session_id: string; resume_token: string; params: unknown };
    this.session = p.session_id;
    this.token = p.resume_token;
    this.agent = String(ack.source);
    await this.req('handshake.ready', { params: p.params });
    // Answer pings, so that liveness never ends the session.
    const seen = new Set<unknown>();
    const pong = setInterval(() => {
      for (const m of this.link.got) {
        if (m.type === 'ping' && !seen.has(m.message_id)) {
          seen.add(m.message_id);
          this.link.send(Buffer.from(JSON.stringify(this.msg('pong', {}, { reply_to: m.message_id }))));
        }
      }
      if (this.link.closed) clearInterval(pong);
    }, 200);
    pong.unref();
  }
  result(taskId: string, ms?: number): Promise<Record<string, unknown>> {
    return this.wait((m) => m.type === 'task.result' && m.task_id === taskId, ms);
  }
}

/** Another principal's traffic must not erase an idempotency record (spec: idempotency#keeping-records). */
export async function evict(): Promise<void> {
  const server = await listening();
  try {
    const victim = new Requester(await wsLink(server.url), 'soak.victim');
    await victim.handshake();
    await victim.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'evict' } },
      { task_id: 'v1', idempotency_key: 'once' },
    );
    await victim.result('v1');
    const attacker = new Requester(await wsLink(server.url), 'soak.attacker');
    await attacker.handshake();
    const n = 4_200;
    let done = 0;
    for (let i = 0; i < n; i += 32) {
      const sent = Array.from({ length: Math.min(32, n - i) }, (_, j) =>
        attacker.msg('task.request', { capability: 'tap.test.echo', input: i + j }, { task_id: `a${i + j}` }),
      );
      for (const m of sent) attacker.link.send(Buffer.from(JSON.stringify(m)));
      for (const m of sent) {
        const reply = await attacker.wait((x) => x.reply_to === m.message_id, 60_000);
        if (reply.type === 'task.accepted') {
          await attacker.result(String(m.task_id), 60_000);
          done++;
        }
      }
      attacker.link.got.length = 0;
    }
    notes.push(`eviction: another principal finished ${done} of ${n} tasks`);
    const retry = await victim.req(
      'task.request',
      { capability: 'tap.test.counter', input: { key: 'evict' } },
      { task_id: 'v2', idempotency_key: 'once' },
    );
    if (retry.type === 'task.accepted') {
      figures.eviction_effects_doubled++;
      notes.push(`eviction: after ${n} tasks of another principal the victim's retry ran again`);
    }
  } finally {
    server.child.kill('SIGTERM');
  }
}

/** Small task.status requests for a large result must not pin memory per request (spec: limits#bounded-tables). */
export async function amplify(): Promise<void> {
  const server = await listening();
  try {
    const r = new Requester(await wsLink(server.url), 'soak.amplifier');
    await r.handshake();
    await r.req('task.request', { capability: 'tap.test.echo', input: 'x'.repeat(900_000) }, { task_id: 'big' });
    await r.result('big');
    const before = rssKb(server.child.pid);
    const n = settings.short ? 100 : 3_000;
    const batch = 20;
    let asked = 0;
    while (asked < n) {
      const sent: Record<string, unknown>[] = [];
      for (let j = 0; j < batch; j++) sent.push(r.msg('task.status', {}, { task_id: 'big' }));
      asked += batch;
      for (const m of sent) r.link.send(Buffer.from(JSON.stringify(m)));
      try {
        await r.wait((x) => x.reply_to === sent.at(-1)!.message_id, 60_000);
      } catch (err) {
        // A requester that reads its replies slower than they come (a loaded machine) may be closed as lost:
        // its unread output past the agent's bound (spec: limits#back-pressure) or its heartbeats missed
        // (spec: liveness). That is the agent defending itself, not a crash, as long as it lives and serves
        // a new session; how the connection ended is noted.
        if (!r.link.closed || server.child.exitCode !== null || server.child.signalCode !== null) throw err;
        figures.closes_by_agent++;
        await new Requester(await wsLink(server.url), 'soak.after-amplifier').handshake();
        notes.push(
          `amplification: the agent ended the connection (${r.link.ended ?? 'closed'}) after ${asked} task.status, then served a new session`,
        );
        break;
      }
      r.link.got.length = 0; // keep this side's memory flat
    }
    const after = rssKb(server.child.pid);
    figures.amplification_growth_kb = Math.max(0, after - before);
    figures.peak_rss_kb = Math.max(figures.peak_rss_kb, after);
    notes.push(`amplification: ${asked} task.status for a 900 KB result, agent RSS ${before} → ${after} KB`);
  } finally {
    server.child.kill('SIGTERM');
  }
}
