/**
 * Agents that break one rule of the NATS binding on purpose, for the self-test of the nats
 * profile: each serves the reference runtime through a listener with one fault.
 */
import { connect, headers as natsHeaders, type Msg } from '@nats-io/transport-node';
import { createAgent, withConformanceCapabilities, type PeerKey } from '../../reference/agent/index.ts';
import { Header, NatsTransport, isConnectionId, openSubject, subjectsOf } from '../../reference/transports/nats/index.ts';
import { parseKeepalive } from '../../reference/transports/nats/keepalive.ts';

/** The rule each broken agent breaks. */
export type NatsFault =
  /**
   * Answers the open request before it subscribes to the connection's inbound subject
   * (TAP-NATS-003), from its third connection on: the first two, the harness's count of the
   * processes that answer and its probe, work.
   */
  | 'late-subscribe'
  /** Accepts any connection id, even one already open or not a subject token (TAP-NATS-004). */
  | 'any-connection-id'
  /** Announces keepalives but never sends them (TAP-NATS-012). */
  | 'no-keepalives'
  /** Accepts an open request whatever Tap-Keepalive-Ms it announces, 1e13 included (TAP-NATS-045). */
  | 'any-keepalive'
  /**
   * Numbers every frame before it checks the signature, so that a forged frame carrying the next
   * Tap-Seq takes the number of the requester's own next message (TAP-NATS-047).
   */
  | 'seq-before-signature'
  /** Subscribes to its open subject outside the queue group tap-agents (TAP-NATS-048). */
  | 'no-queue-group'
  /** Counts the open reply as its first message: its first message on the connection is Tap-Seq 2 (TAP-NATS-049). */
  | 'seq-counts-open'
  /** Takes an open request without Tap-Keepalive-Ms as announcing no keepalives: a silent requester is never lost (TAP-NATS-050). */
  | 'no-default-keepalive'
  /** Publishes a connection's messages on <prefix>.out.<agent_id>.<connection>, the tokens swapped (TAP-NATS-006). */
  | 'wrong-out-subject';

/**
 * Starts a broken agent `agentId` on the NATS server at `url`, holding `keys` for integrity;
 * resolves with its stop function.
 */
export async function startBrokenNatsAgent(
  url: string,
  agentId: string,
  fault: NatsFault,
  keys: PeerKey[] = [],
): Promise<() => Promise<void>> {
  const agent = createAgent({
    card: {
      agent_id: agentId,
      name: `broken (${fault})`,
      description: `The reference runtime behind a NATS listener that breaks one rule: ${fault}.`,
      capabilities: [],
      limits: { max_concurrent_tasks: 16, max_task_seconds: 60, max_message_bytes: 1048576 },
    },
    capabilities: withConformanceCapabilities(),
    shutdownGraceMs: 1000,
    logger: () => {},
    keys,
    env: false,
  });
  const nc = await connect({ servers: url });
  const open = new Set<string>();
  let opened = 0;
  /** The late subscriptions still to be made (late-subscribe), cleared when the agent stops. */
  const late = new Set<NodeJS.Timeout>();
  const accept = (msg: Msg): void => {
    const id = msg.headers?.get(Header.CONNECTION) ?? '';
    if (fault !== 'any-connection-id' && (!isConnectionId(id) || open.has(id))) {
      const h = natsHeaders();
      h.set(Header.OPEN, '1008');
      msg.respond('bad connection id', { headers: h });
      return;
    }
    const keepalive = msg.headers?.get(Header.KEEPALIVE_MS) ?? '';
    if (fault !== 'any-keepalive' && keepalive !== '' && parseKeepalive(keepalive) === undefined) {
      const h = natsHeaders();
      h.set(Header.OPEN, '1008');
      msg.respond('Tap-Keepalive-Ms out of range', { headers: h });
      return;
    }
    const ok = natsHeaders();
    ok.set(Header.OPEN, 'ok');
    ok.set(Header.KEEPALIVE_MS, '1000');
    const serve = (): void => {
      const subjects = subjectsOf('tap', agentId, id.replace(/[^A-Za-z0-9_-]/g, '_'));
      const t = new NatsTransport({
        nc,
        publishTo: fault === 'wrong-out-subject' ? `tap.out.${agentId}.${id}` : subjects.toRequester,
        subscribeTo: subjects.toAgent,
        maxFrameBytes: 2 * 1048576,
        // The reply announces 1000 ms; the no-keepalives agent sends none within any test's life.
        keepaliveMs: fault === 'no-keepalives' ? 3_600_000 : 1000,
        connectionId: id,
        ...(fault === 'no-default-keepalive' && keepalive === '' ? { peerKeepaliveMs: 3_600_000 } : {}),
      });
      if (fault === 'seq-counts-open') t.skipSeq(1);
      // The runtime's screen never reaches this transport: every frame is numbered as it comes.
      if (fault === 'seq-before-signature') Object.defineProperty(t, 'screen', { get: () => undefined, set: () => {} });
      open.add(id);
      const onclose = t.onclose;
      t.onclose = (info) => {
        open.delete(id);
        onclose?.(info);
      };
      agent.attach(t);
    };
    // Served right: the run's wait for the agent to listen (conformance/wait-listening.ts) and its probe; late: every case's connection.
    if (fault === 'late-subscribe' && ++opened > 2) {
      // The connection id is taken as it is answered, as a real agent's would be: the harness's
      // count of the processes that answer repeats one id, and must be refused 1008 however long
      // a loaded machine takes to send the repeats (else a repeat that came after the late
      // subscription was refused and the others not, and one agent counted as several).
      open.add(id);
      msg.respond(new Uint8Array(0), { headers: ok });
      const timer = setTimeout(() => {
        late.delete(timer);
        if (!nc.isClosed()) serve();
      }, 300);
      late.add(timer);
      return;
    }
    serve();
    void nc.flush().then(() => msg.respond(new Uint8Array(0), { headers: ok }));
  };
  nc.subscribe(openSubject('tap', agentId), {
    ...(fault === 'no-queue-group' ? {} : { queue: 'tap-agents' }),
    callback: (err, msg) => (err ? undefined : accept(msg)),
  });
  await nc.flush();
  return async () => {
    for (const timer of late) clearTimeout(timer);
    await agent.shutdown();
    await nc.close();
  };
}
