/** Steps that several case files of the nats profile share. */
import type { CaseContext } from '../../context.ts';
import { targetTls } from '../../target.ts';
import { connect, headers as natsHeaders } from '../../../reference/transports/nats/client.ts';
import { Header, openSubject, parseNatsUrl, subjectsOf } from '../../../reference/transports/nats/index.ts';
import { natsClientOptions } from '../../../reference/transports/nats/url.ts';

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
