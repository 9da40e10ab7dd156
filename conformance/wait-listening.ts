/**
 * An agent started in the background just before tap-conform may not accept connections yet: the
 * run waits for a WebSocket or NATS agent to answer (20 s unless --wait says otherwise) before its
 * first handshake, and says once that it waits. A stdio agent is started by the run itself, and
 * any other failure to connect ends the run at once, as before.
 */
import { openConnection, type BindingTarget } from './target.ts';

/** Failures that mean "not listening yet": nobody on the port, or no agent behind the subject yet. */
const NOT_YET = /connection refused|no agent \S+ listens there/i;

/** Resolves once the target accepts a connection (closed again at once); rejects as openConnection does otherwise. */
export async function whenListening(target: BindingTarget, waitMs: number, log?: (line: string) => void): Promise<void> {
  if (target.kind === 'stdio') return;
  const until = Date.now() + waitMs;
  for (let said = false; ; said = true) {
    try {
      const conn = await openConnection(target);
      await conn.transport.close({ code: 1000, reason: 'tap-conform: the agent listens' }).catch(() => undefined);
      return;
    } catch (err) {
      if (!NOT_YET.test((err as Error).message) || Date.now() > until) throw err;
      if (!said) log?.(`tap-conform: waiting up to ${Math.round(waitMs / 1000)} s for ${target.display} to accept connections`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
