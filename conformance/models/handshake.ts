/**
 * The handshake command model: a connection's phase, and the reply each handshake message must
 * get in each phase (spec: handshake). Commands throw Broken when the agent answers otherwise.
 */
import fc from 'fast-check';
import type { CaseContext } from '../context.ts';
import type { Peer } from '../peer.ts';
import type { Wire } from '../session-state.ts';
import { describeMessage, initPayload } from '../steps.ts';
import { expect, reply } from './common.ts';

export type Phase = 'fresh' | 'acked' | 'established' | 'closed';
export interface HsModel {
  phase: Phase;
}
export interface HsReal {
  ctx: CaseContext;
  peer: Peer;
}

const FAKE_SESSION = 'AAAAAAAAAAAAAAAAAAAAAA';

export class PingCmd implements fc.AsyncCommand<HsModel, HsReal> {
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(_m: HsModel, r: HsReal) {
    const p = await r.peer.ping();
    expect(p.ok, `a ping got no pong: ${p.ok ? '' : p.outcome.detail}`);
  }
  toString = () => 'ping';
}

class InitCmd implements fc.AsyncCommand<HsModel, HsReal> {
  constructor(
    readonly heartbeat: number,
    readonly maxBytes: number,
    readonly streaming: boolean,
  ) {}
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(m: HsModel, r: HsReal) {
    const peer = r.peer;
    const payload = initPayload(peer, {
      params: { heartbeat_ms: this.heartbeat, max_message_bytes: this.maxBytes, streaming: this.streaming },
    });
    const sent = await peer.post('handshake.init', payload);
    const got = await reply(peer, sent);
    if (m.phase !== 'fresh') {
      expect(
        got.msg.type === 'error' && got.msg.payload.code === 'PROTOCOL_VIOLATION',
        `a handshake.init in phase ${m.phase} got ${describeMessage(got.msg)}, not PROTOCOL_VIOLATION`,
        'TAP-HS-015',
      );
      return;
    }
    expect(got.msg.type === 'handshake.ack', `a valid handshake.init got ${describeMessage(got.msg)}`);
    const p = got.msg.payload.params ?? {};
    const own = got.msg.payload.agent?.limits ?? {};
    // The larger of both sides, clamped to [1000, 60000]: at least the clamped proposal.
    const floor = Math.min(60000, Math.max(1000, this.heartbeat));
    expect(p.heartbeat_ms >= floor && p.heartbeat_ms <= 60000, `heartbeat_ms ${this.heartbeat} became ${p.heartbeat_ms}`, 'TAP-HS-009');
    expect(
      p.max_message_bytes === Math.min(this.maxBytes, own.max_message_bytes ?? this.maxBytes),
      `max_message_bytes ${this.maxBytes} became ${p.max_message_bytes} (the card says ${own.max_message_bytes})`,
      'TAP-HS-009',
    );
    expect(this.streaming || p.streaming === false, 'streaming: false was not kept', 'TAP-HS-009');
    peer.state.sessionId = got.msg.payload.session_id;
    peer.state.agentId = got.msg.payload.agent?.agent_id ?? peer.state.agentId;
    peer.state.params = p;
    peer.state.version = got.msg.payload.version;
    peer.state.bound = true;
    m.phase = 'acked';
  }
  toString = () => `init(heartbeat ${this.heartbeat}, max ${this.maxBytes}, streaming ${this.streaming})`;
}

class ReadyCmd implements fc.AsyncCommand<HsModel, HsReal> {
  constructor(readonly matching: boolean) {}
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(m: HsModel, r: HsReal) {
    const peer = r.peer;
    const params = peer.state.params
      ? { ...peer.state.params }
      : {
          heartbeat_ms: 15000,
          max_message_bytes: 1048576,
          max_concurrent_tasks: 4,
          request_timeout_ms: 30000,
          streaming: true,
          integrity: 'none',
        };
    if (!this.matching) params.max_concurrent_tasks = Number(params.max_concurrent_tasks) + 1;
    const extra = peer.state.bound ? {} : { session_id: FAKE_SESSION };
    const sent = await peer.post(
      'handshake.ready',
      { params },
      extra,
      this.matching ? {} : { deliberate: 'params that differ from the ack' },
    );
    const got = await reply(peer, sent);
    if (m.phase === 'acked' && this.matching) {
      expect(got.msg.type === 'handshake.go', `a matching handshake.ready got ${describeMessage(got.msg)}`);
      peer.state.established = true;
      m.phase = 'established';
      return;
    }
    expect(
      got.msg.type === 'error' && got.msg.payload.code === 'PROTOCOL_VIOLATION',
      `a handshake.ready (${this.matching ? 'matching' : 'mismatched'}) in phase ${m.phase} got ${describeMessage(got.msg)}, not PROTOCOL_VIOLATION`,
      this.matching ? 'TAP-HS-015' : 'TAP-HS-011',
    );
    if (m.phase === 'acked') {
      expect(got.msg.payload.fatal === true, 'PROTOCOL_VIOLATION for a mismatched ready is not fatal', 'TAP-HS-011');
      const closed = await peer.waitClosed(r.ctx.scaled(5000));
      expect(closed, 'the transport stayed open after the fatal PROTOCOL_VIOLATION', 'TAP-HS-011');
      m.phase = 'closed';
    }
  }
  toString = () => `ready(${this.matching ? 'matching' : 'mismatched'})`;
}

class EarlyRequestCmd implements fc.AsyncCommand<HsModel, HsReal> {
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(m: HsModel, r: HsReal) {
    const peer = r.peer;
    const extra: Partial<Wire> = { task_id: peer.ids.task('probe') };
    if (!peer.state.bound) extra.session_id = FAKE_SESSION;
    const sent = await peer.post('task.status', {}, extra);
    const got = await reply(peer, sent);
    const want = m.phase === 'established' ? 'UNKNOWN_TASK' : 'HANDSHAKE_REQUIRED';
    expect(
      got.msg.type === 'error' && got.msg.payload.code === want,
      `task.status in phase ${m.phase} got ${describeMessage(got.msg)}, not ${want}`,
      'TAP-HS-014',
    );
  }
  toString = () => 'task.status';
}

class UnknownTypeCmd implements fc.AsyncCommand<HsModel, HsReal> {
  check = (m: Readonly<HsModel>) => m.phase !== 'closed';
  async run(_m: HsModel, r: HsReal) {
    const sent = await r.peer.post('task.whatever', {}, {}, { deliberate: 'an unknown type' });
    const got = await reply(r.peer, sent);
    expect(
      got.msg.type === 'error' && got.msg.payload.code === 'UNKNOWN_MESSAGE_TYPE',
      `an unknown type got ${describeMessage(got.msg)}`,
      'TAP-MSG-002',
    );
  }
  toString = () => 'unknown type';
}

export const handshakeCommands = [
  fc.constant(new PingCmd()),
  fc
    .tuple(fc.integer({ min: 0, max: 120_000 }), fc.integer({ min: 1024, max: 4_194_304 }), fc.boolean())
    .map(([h, b, s]) => new InitCmd(h, b, s)),
  fc.boolean().map((ok) => new ReadyCmd(ok)),
  fc.constant(new EarlyRequestCmd()),
  fc.constant(new UnknownTypeCmd()),
];
