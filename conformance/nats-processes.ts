/**
 * How many processes answer for an agent id on a NATS server (spec: bindings-nats#opening).
 * Processes that share an id share its open subject as a queue group, and each connection
 * reaches one of them at random; a session lives in the process that opened it. The suite judges
 * one agent, so a run against several would read their differences (a resume that reaches the
 * other process, a connection id one of them does not know) as protocol failures.
 *
 * The count rests on TAP-NATS-004: a process refuses with 1008 an open request naming a
 * connection it has open. The harness opens a connection of its own and asks again for the same
 * id several times: the process that holds it refuses, and any other process accepts it once.
 */
import { connect, headers as natsHeaders } from '../reference/transports/nats/client.ts';
import { Header, newConnectionId, openSubject, subjectsOf } from '../reference/transports/nats/subjects.ts';
import type { TlsOptions } from '../reference/transports/tls.ts';
import { natsClientOptions, parseNatsUrl } from '../reference/transports/nats/url.ts';

/** Open requests after the first: two processes all of which the queue group hands to one are 2^-16 likely. */
const TRIES = 16;

/**
 * The number of processes that accepted one connection id, or undefined when the count says
 * nothing: the agent refused the first request, or accepted every one (an agent that breaks
 * TAP-NATS-004, which the nats profile judges).
 */
export async function answeringProcesses(url: string, timeoutMs: number, prefix = 'tap', tls?: TlsOptions): Promise<number | undefined> {
  const address = parseNatsUrl(url);
  const agentId = address.agentId!;
  const nc = await connect(natsClientOptions(address, tls));
  const id = newConnectionId();
  const answers: string[] = [];
  try {
    for (let i = 0; i <= TRIES; i++) {
      const h = natsHeaders();
      h.set(Header.CONNECTION, id);
      // Long enough that no process counts the connection lost while the harness asks.
      h.set(Header.KEEPALIVE_MS, '60000');
      const reply = await nc.request(openSubject(prefix, agentId), new Uint8Array(0), { headers: h, timeout: timeoutMs });
      answers.push(reply.headers?.get(Header.OPEN) ?? '');
      if (answers[0] !== 'ok') return undefined;
    }
    // Every process that accepted the connection closes it (spec: bindings-nats#closing).
    const close = natsHeaders();
    close.set(Header.SEQ, '1');
    close.set(Header.CONTROL, 'close');
    close.set(Header.CLOSE_CODE, '1000');
    nc.publish(subjectsOf(prefix, agentId, id).toAgent, 'tap-conform counted the processes that answer for the agent', {
      headers: close,
    });
    await nc.flush();
  } finally {
    await nc.close();
  }
  const accepted = answers.filter((a) => a === 'ok').length;
  return answers.includes('1008') ? accepted : undefined;
}

/** The sentence that stops a run against several processes, and what to do. */
export function severalProcesses(agentId: string, url: string, n: number): string {
  const servers = parseNatsUrl(url).servers.join(',');
  return `${n === 2 ? 'two' : `${n}`} processes answer for ${agentId} on ${servers}: each connection reaches one of them, so a session resumed on a new connection can reach another process, and the suite would judge them as one agent (spec: bindings-nats#opening). Stop all but one of them (or test one on a NATS server of its own), then run again`;
}
