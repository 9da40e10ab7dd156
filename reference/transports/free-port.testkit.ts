/**
 * Free loopback ports for the servers a test starts (nats-server, an agent that listens late).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The lowest port of the kernel's ephemeral range, from which outgoing connections take their local
 * ports (Linux: /proc/sys/net/ipv4/ip_local_port_range; 32768 elsewhere).
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : 32768;
  } catch {
    return 32768;
  }
}

/** Whether a port can be listened on at 127.0.0.1 now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free TCP port on 127.0.0.1 for a server a test starts, picked at random below the kernel's
 * ephemeral range: a port handed out by `listen(0)` comes from that range, and between its check and
 * the server's bind any outgoing connection of the machine (a route between two nodes of a cluster,
 * a client of a test beside it) may take it as its local port.
 */
export async function freePort(): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = Math.max(1025, high - 12_000);
  for (let tries = 0; tries < 50; tries++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port on 127.0.0.1 between ${low} and ${high} after 50 tries`);
}
