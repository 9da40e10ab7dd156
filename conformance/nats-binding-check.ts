/**
 * What went wrong at the binding when the probe's handshake over NATS found no answer
 * (spec: bindings-nats#frames): a connection opened by hand, numbered and watched without the
 * transport in between, tells a wrong out subject or a Tap-Seq counted from another number from
 * an agent that answers nothing at all, so that the run can name the case and the requirement
 * instead of saying it could not run.
 */
import { connect, headers as natsHeaders } from '../reference/transports/nats/client.ts';
import { buildSubject, Header, newConnectionId, openSubject, subjectsOf, Wildcard } from '../reference/transports/nats/subjects.ts';
import type { TlsOptions } from '../reference/transports/tls.ts';
import { natsClientOptions, parseNatsUrl } from '../reference/transports/nats/url.ts';

/** A fault of the binding that every case's connection would meet, and the case that judges it. */
export interface BindingFault {
  /** The case that checks the rule: the run stops after it. */
  caseId: string;
  requirement: string;
  /** One sentence: what the agent did, against which rule. */
  sentence: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Opens one connection to the agent by hand and watches it for about 2.5 of the agent's keepalive
 * intervals, sending keepalives numbered from 1: undefined when the agent numbers and publishes as
 * the binding says (the fault is elsewhere), or refuses the open request.
 */
export async function natsBindingFault(
  url: string,
  timeoutMs: number,
  tls?: TlsOptions,
  prefix = 'tap',
): Promise<BindingFault | undefined> {
  const address = parseNatsUrl(url);
  const agentId = address.agentId!;
  const nc = await connect(natsClientOptions(address, tls));
  const id = newConnectionId();
  const subjects = subjectsOf(prefix, agentId, id);
  const out: { seq: string; control: string; code: string }[] = [];
  const elsewhere = new Set<string>();
  try {
    nc.subscribe(subjects.toRequester, {
      callback: (err, m) => {
        if (err) return;
        const get = (name: string): string => m.headers?.get(name) ?? '';
        out.push({ seq: get(Header.SEQ), control: get(Header.CONTROL), code: get(Header.CLOSE_CODE) });
      },
    });
    // Anything else that carries the connection id: an out subject of another shape. A server that
    // denies the harness this subscription leaves the set empty.
    nc.subscribe(buildSubject(prefix, Wildcard.TAIL), {
      callback: (err, m) => {
        if (err || m.subject === subjects.toRequester || m.subject === subjects.toAgent) return;
        if (m.subject.split('.').includes(id)) elsewhere.add(m.subject);
      },
    });
    await nc.flush();
    const h = natsHeaders();
    h.set(Header.CONNECTION, id);
    h.set(Header.KEEPALIVE_MS, '1000');
    const reply = await nc
      .request(openSubject(prefix, agentId), new Uint8Array(0), { headers: h, timeout: timeoutMs })
      .catch(() => undefined);
    if (reply?.headers?.get(Header.OPEN) !== 'ok') return undefined;
    const every = Number(reply.headers.get(Header.KEEPALIVE_MS)) || 1000;
    const watchMs = Math.min(2.5 * every, 10_000) + 500;
    let seq = 0;
    const control = (kind: 'keepalive' | 'close'): void => {
      const c = natsHeaders();
      c.set(Header.SEQ, String(++seq));
      c.set(Header.CONTROL, kind);
      if (kind === 'close') c.set(Header.CLOSE_CODE, '1000');
      nc.publish(subjects.toAgent, kind === 'close' ? 'tap-conform looked at the binding' : new Uint8Array(0), { headers: c });
    };
    const started = Date.now();
    while (Date.now() - started < watchMs) {
      control('keepalive');
      await sleep(700);
    }
    control('close');
    await nc.flush();
    const first = out[0];
    if (first && first.seq !== '1')
      return {
        caseId: 'nats.open.first-seq',
        requirement: 'TAP-NATS-049',
        sentence: `the agent numbered its first message on a connection Tap-Seq ${JSON.stringify(first.seq)}, not 1 (TAP-NATS-049, TAP-NATS-006), so the harness counts a gap on every connection and loses it (TAP-NATS-007)`,
      };
    const lost = out.find((m) => m.control === 'close' && m.code === '1006');
    if (lost)
      return {
        caseId: 'nats.open.first-seq',
        requirement: 'TAP-NATS-049',
        sentence:
          "the agent counted the requester's first message, Tap-Seq 1, as a gap and closed the connection with 1006 (TAP-NATS-049: the open request takes no number), so every connection of the run is lost at its first frame",
      };
    if (out.length === 0)
      return {
        caseId: 'nats.frames.out-subject',
        requirement: 'TAP-NATS-006',
        sentence:
          elsewhere.size > 0
            ? `the agent published the connection's messages on ${[...elsewhere].slice(0, 2).join(', ')}, not on ${subjects.toRequester} (TAP-NATS-006), so the harness hears nothing on any connection`
            : `the agent published nothing on ${subjects.toRequester} within ${Math.round(watchMs)} ms of accepting the connection, not even a keepalive (TAP-NATS-006, TAP-NATS-012), so the harness hears nothing on any connection`,
      };
    const gap = out.findIndex((m, i) => m.seq !== String(i + 1));
    if (gap >= 0)
      return {
        caseId: 'nats.frames.out-subject',
        requirement: 'TAP-NATS-006',
        sentence: `the agent numbered its messages on a connection ${JSON.stringify(out.slice(0, gap + 1).map((m) => m.seq))}, not 1, 2, 3 … without gaps (TAP-NATS-006)`,
      };
    return undefined;
  } finally {
    await nc.close().catch(() => {});
  }
}
