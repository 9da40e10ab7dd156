/**
 * tap-reference-agent: the reference TAP agent, serving the conformance capabilities.
 *
 * Served by runAgent's command line (reference/serve): stdio by default, or WebSocket (--listen),
 * NATS (--nats, --durable) and a mesh (--mesh); keys for integrity come from TAP_HMAC_KEY_ID,
 * TAP_HMAC_KEY and TAP_HMAC_PEER (spec: conformance#key-provisioning). Its own options set the
 * agent id and the card's task limits.
 */
import { createAgent, stderrLogger, withConformanceCapabilities, type AgentOptions } from '../agent/index.ts';
import { stopOnSignals } from '../agent/signals.ts';
import type { AgentCard } from '../../schemas/src/index.ts';
import { parseCommandLine, UsageError, wholeOption } from '../serve/command-line.ts';
import { agentUsage, serveAgent } from '../serve/run.ts';

const PROGRAM = 'tap-reference-agent';

const ABOUT = 'Serves the TAP 1.0 reference agent with the conformance capabilities (tap.test.*).';

const OWN_USAGE = `  --agent-id ID       the agent id (default tap.reference-agent)
  --max-concurrent-tasks N, --max-tasks-per-session N, --max-tasks-per-principal N
                      the card's task limits (defaults 64, 32 and 32); more are refused with BUSY
`;

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
  TAP_BREAK           (stdio only) break one rule on purpose: the name of a mutant of
                      the conformance suite's mutation score (tools/mutation.ts --list)
`;

const OWN_OPTIONS = {
  'agent-id': { type: 'string' },
  'max-concurrent-tasks': { type: 'string' },
  'max-tasks-per-session': { type: 'string' },
  'max-tasks-per-principal': { type: 'string' },
} as const;

interface Own {
  agentId: string;
  maxConcurrentTasks: number;
  maxTasksPerSession: number;
  maxTasksPerPrincipal: number;
}

function own(values: Record<string, unknown>): Own {
  const agentId = typeof values['agent-id'] === 'string' ? values['agent-id'] : 'tap.reference-agent';
  if (!/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*$/.test(agentId) || agentId.length > 128) {
    throw new UsageError(`--agent-id ${agentId} is not an identifier: lowercase letters, digits, "_" and "-", in dot-separated segments`);
  }
  return {
    agentId,
    maxConcurrentTasks: wholeOption(values, 'max-concurrent-tasks', 64, 1),
    maxTasksPerSession: wholeOption(values, 'max-tasks-per-session', 32, 1),
    maxTasksPerPrincipal: wholeOption(values, 'max-tasks-per-principal', 32, 1),
  };
}

function card(o: Own): AgentCard {
  return {
    agent_id: o.agentId,
    name: 'TAP reference agent',
    description:
      'The reference implementation of a TAP 1.0 agent. It offers the conformance capabilities tap.test.* ' +
      'and is good at proving what the protocol requires; it does no useful work of its own. ' +
      'Limits: nesting 64 levels; 65536-byte frames before the ack; per session 10000 remembered message ids ' +
      'and 4 MiB of remembered replies; per principal 4096 tasks kept and 256 MiB of retained messages, ' +
      '16384 tasks in all, each kept at least the resume window; 4096 sessions, 1024 per source; ' +
      '1024 connections, 256 per address; the anonymous sessions of one address share the per-principal task limit; ' +
      '16 MiB of unread output per connection.',
    capabilities: [],
    limits: {
      max_concurrent_tasks: o.maxConcurrentTasks,
      max_task_seconds: 3600,
      max_message_bytes: 1048576,
      max_tasks_per_session: o.maxTasksPerSession,
      max_tasks_per_principal: o.maxTasksPerPrincipal,
    },
  };
}

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
    o = own(parsed.values);
  } catch (err) {
    die((err as Error).message);
  }
  const options: AgentOptions = {
    card: card(o),
    capabilities: withConformanceCapabilities(),
    // The floor of the range (spec: limits#heartbeats): the final heartbeat_ms is the larger of the
    // proposal and this, so a requester gets what it proposes (1000 ms when it proposes none), and
    // the suite's liveness and late-plan cases wait about a second per heartbeat instead of ten.
    heartbeatMs: 1_000,
    logger: stderrLogger,
  };
  // TAP_BREAK=<mutant> breaks one rule on purpose, for the mutation score of tap-conform (tools/mutation.ts).
  const broken = process.env.TAP_BREAK;
  if (broken && !parsed.serve.listen && !parsed.serve.nats) {
    let agent;
    try {
      agent = createAgent({ ...options, stateDir: parsed.serve.stateDir, shutdownGraceMs: parsed.serve.graceMs });
    } catch (err) {
      die((err as Error).message);
    }
    const stopped = agent;
    const release = stopOnSignals((signal) => stopped.shutdown(`the agent received ${signal}`), parsed.serve.graceMs ?? 10_000);
    const { serveBrokenStdio } = await import('../../conformance/mutation/switch.ts');
    await serveBrokenStdio(agent, broken, agent.card.limits.max_message_bytes).catch((err: Error) => die(err.message));
    await agent.shutdown('the session is over');
    release();
    return 0;
  }
  return serveAgent(options, parsed.serve, PROGRAM);
}

process.exit(await main());
