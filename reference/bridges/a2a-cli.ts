/** tap-bridge a2a: serves a TAP agent or a mesh as an A2A server over HTTP until SIGINT or SIGTERM (spec: bridge-a2a). */
import { type A2aTarget, serveA2a } from './a2a-server.ts';
import { openServed } from './mesh-target.ts';
import { type BridgeArgs, parseBridgeArgs, UsageError } from './tap-target.ts';

const HELP = `Usage: tap-bridge a2a --port N [--host H] (--url ws://host:port/path | --mesh nats://host:port [--capability NAME,...] | -- <tap agent command> [args...])

Serves a TAP agent as an A2A server (JSON-RPC over HTTP, A2A 1.0 and 0.3): its agent card at
/.well-known/agent-card.json lists each TAP capability as a skill.

  --port N         the port to listen on (0: any free one; the URL is printed on stdout)
  --host H         the address to listen on (default 127.0.0.1)
  --url URL        reach the agent over WebSocket (with reconnect and resume)
  --mesh URL       serve the mesh whose registry is on the NATS server at URL: the skills are the
                   capabilities of its live agents (the card follows them joining and leaving),
                   each message a mesh task sent to one of them
  --capability NAMES
                   with --mesh, only these capabilities (comma-separated) are skills
  -- COMMAND ...   spawn the agent and speak TAP over its stdio

Over --mesh an input request is not carried to the A2A client: the task is cancelled and its
status says so; ListTasks lists the tasks this facade holds.

A message picks its capability with a DataPart { "capability": "...", "input": ... } or metadata
"tap/capability" (not needed when the card has one capability); its messageId is the TAP
idempotency key. Every stream event carries metadata "tap/sequence"; a client that resubscribes
with the header tap-last-sequence: N gets every event after N. The mapping: spec/1.1 "A TAP agent
as an A2A server".
`;

/** Runs the subcommand with its own arguments; resolves with the exit status. */
export async function run(args: string[]): Promise<number> {
  let parsed: BridgeArgs;
  try {
    parsed = parseBridgeArgs(args, ['--port', '--host', '--mesh', '--capability']);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tap-bridge a2a: ${err.message}\nRun tap-bridge a2a --help for usage.\n`);
    return 2;
  }
  if (parsed.help || (parsed.target === undefined && parsed.mesh === undefined)) {
    process.stdout.write(HELP);
    return 0;
  }
  const portText = parsed.options.get('--port');
  const port = Number(portText);
  if (typeof portText !== 'string' || !/^\d+$/.test(portText) || port > 65535) {
    process.stderr.write(
      `tap-bridge a2a: ${portText === undefined ? 'no --port' : `--port ${String(portText)} is not a port`}; give --port N (0 to 65535, 0 for any free port)\n`,
    );
    return 2;
  }
  const host = parsed.options.get('--host');
  let client: A2aTarget;
  try {
    client = await openServed(
      parsed,
      'tap-bridge-a2a',
      (names) => `tap-bridge a2a: no live agent in the mesh offers ${names} yet; the skill appears once one joins`,
    );
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`tap-bridge a2a: ${err.message}\n`);
    return 2;
  }
  const facade = await serveA2a(client, { port, ...(typeof host === 'string' ? { host } : {}) });
  const served = parsed.mesh === undefined ? client.agent.agent_id : `the mesh of ${parsed.mesh}`;
  process.stdout.write(`tap-bridge a2a: ${served} is served at ${facade.url} (card: ${facade.url}.well-known/agent-card.json)\n`);
  const status = await new Promise<number>((resolve) => {
    process.once('SIGINT', () => resolve(0));
    process.once('SIGTERM', () => resolve(0));
    if ('on' in client)
      client.on('closed', () => {
        process.stderr.write('tap-bridge a2a: the TAP agent closed the session; stopping\n');
        resolve(1);
      });
  });
  await facade.close();
  await ('on' in client ? client.close('the A2A facade stops') : client.close()).catch(() => {});
  return status;
}
