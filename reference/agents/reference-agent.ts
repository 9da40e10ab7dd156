/**
 * tap-reference-agent: the reference TAP agent, serving the conformance capabilities.
 *
 * Served by runAgent's command line (reference/serve): stdio by default, or WebSocket (--listen),
 * NATS (--nats, --durable) and a mesh (--mesh); keys for integrity come from TAP_HMAC_KEY_ID,
 * TAP_HMAC_KEY and TAP_HMAC_PEER (spec: conformance#key-provisioning). Its own options set the
 * agent id and the card's task limits.
 */
import { parseCommandLine } from '../serve/command-line.ts';
import { agentUsage, serveAgent } from '../serve/run.ts';
import { type Own, OWN_OPTIONS, OWN_USAGE, ownOptions, referenceAgentOptions } from './reference-options.ts';

const PROGRAM = 'tap-reference-agent';

const ABOUT = 'Serves the TAP 1.0 reference agent with the conformance capabilities (tap.test.*).';

const LIMITS = `
Limits (spec: limits#nesting, limits#pre-handshake, limits#table-limits, limits#sources,
limits#back-pressure):
  nesting             at most 64 levels; deeper messages get MALFORMED_MESSAGE
  before the ack      frames of at most 65536 bytes; larger ones get MESSAGE_TOO_LARGE
  frames              max_message_bytes 1048576; a WebSocket frame over 2 MiB closes with 1009
  duplicate table     per session 10000 message ids and 4 MiB of replies (the newest 1024 always);
                      a snapshot is remembered as a way to rebuild it, not as a copy
  tasks kept          per principal 4096 and 256 MiB of retained messages, 16384 in all;
                      a finished task is kept at least the resume window, then forgotten only
                      to make room; when none can be made a new task gets BUSY
  sessions            4096 kept, orphaned ones included; when full, an orphaned session with no
                      unfinished task gives way (of the source holding the most), else a new
                      one gets BUSY; one source keeps at most 1024 (a principal, or the
                      anonymous sessions of one address or NATS user)
  connections         1024 WebSocket and NATS connections, 256 per address or named NATS user;
                      more are refused with 1013
  anonymous tasks     the anonymous sessions of one origin share max_tasks_per_principal
  unread output       a peer that leaves 16 MiB unread is dropped at once, and nothing more of
                      it is read (its session stays resumable)
  NATS keepalives     Tap-Keepalive-Ms from 100 to 60000 ms; an open request announcing another
                      value is refused with 1008
  HTTP headers        an upgrade request must arrive within 10 s
`;

/** A one-line error for people, then exit 2. */
function die(message: string): never {
  process.stderr.write(`${PROGRAM}: ${message}\nRun ${PROGRAM} --help for usage.\n`);
  process.exit(2);
}

async function main(): Promise<number> {
  let parsed;
  let o: Own;
  try {
    parsed = parseCommandLine(process.argv.slice(2), OWN_OPTIONS);
    if (parsed.serve.help) {
      process.stdout.write(agentUsage(PROGRAM, ABOUT, OWN_USAGE) + LIMITS);
      return 0;
    }
    o = ownOptions(parsed.values);
  } catch (err) {
    die((err as Error).message);
  }
  return serveAgent(referenceAgentOptions(o), parsed.serve, PROGRAM);
}

process.exit(await main());
