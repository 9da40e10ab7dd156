/**
 * `tapctl nats …`: operating the durable tasks of the NATS binding on JetStream (spec:
 * bindings-nats#task-queue). The NATS client library is loaded only when one of these commands
 * runs: every other tapctl command starts without it.
 */
import { intOption, parseOptions, positionals } from '../cli.ts';
import { checkIdentifier } from '../../transports/nats/subjects.ts';
import { CliError, commandGroup, type Command } from '../registry.ts';
import { natsServerUrl, SERVER_HELP as SERVER_OPTION_HELP, SERVER_OPTIONS } from '../server-url.ts';

const SERVER_HELP = `${SERVER_OPTION_HELP}
  --json              print JSON for scripts (errors too, as { "error": … })`;

const common = { ...SERVER_OPTIONS, json: { type: 'boolean' } } as const;

/** The --capability option, checked: a TAP identifier, which a subject can hold (spec: bindings-nats#subjects). */
function capabilityOption(value: string | undefined): string | undefined {
  if (value === undefined) return value;
  try {
    return checkIdentifier(value, 'capability');
  } catch (err) {
    throw new CliError(`--capability: ${(err as Error).message}`, { usage: true, hint: 'Give one capability, e.g. tap.test.echo.' });
  }
}

const statusCommand: Command = {
  name: 'status',
  summary: 'show the server, JetStream and the TAP streams with their counts',
  help: `Usage: tapctl nats status [--server <url>] [--json]

Shows the server (name, version, cluster, max_payload), the JetStream account (streams,
consumers, storage), the TAP streams (TAP_TASKS, TAP_RESULTS, TAP_DEAD, TAP_EVENTS, the
idempotency bucket and TAP_ADVISORIES) with their messages, consumers and replicas, the queued
records and dead letters per capability, the max-deliveries advisories no runner has answered yet
per consumer, and each capability's consumer: records waiting, in flight (held by a runner or
waiting for redelivery), redelivered, its lease and maximum deliveries, and whether a runner pulls
from it.

Options:
${SERVER_HELP}
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, common);
    positionals(given, []);
    const { runStatus } = await import('./status.ts');
    return runStatus({ server: natsServerUrl(values), json: values.json ?? false }, ctx);
  },
};

const listOptions = { ...common, capability: { type: 'string', short: 'c' }, limit: { type: 'string' } } as const;

const tasksCommand: Command = {
  name: 'tasks',
  summary: 'list the records on the capability queues',
  help: `Usage: tapctl nats tasks [--capability <name>] [--limit <n>] [--server <url>] [--json]

Lists the task records on TAP_TASKS, oldest first, grouped by capability, without consuming
them: stream sequence, task id, the record's state.attempts (its earlier deliveries), whether a
runner has had it (delivered: a runner holds it, or its lease expired and it waits for
redelivery; the server keeps the delivery count of those), and its input.

Options:
  -c, --capability <name>  only this capability's queue
  --limit <n>              at most n records (default 100)
${SERVER_HELP}
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, listOptions);
    positionals(given, []);
    const { runTasks } = await import('./records.ts');
    return runTasks(
      {
        server: natsServerUrl(values),
        json: values.json ?? false,
        capability: capabilityOption(values.capability),
        limit: intOption(values.limit, 'limit', 1) ?? 100,
      },
      ctx,
    );
  },
};

const deadLettersCommand: Command = {
  name: 'dead-letters',
  summary: 'list the dead letters with their reasons',
  help: `Usage: tapctl nats dead-letters [--capability <name>] [--limit <n>] [--server <url>] [--json]

Lists the records on TAP_DEAD, oldest first: records whose deliveries reached the consumer's
maximum without an acknowledgement (last_error MAX_ATTEMPTS) and queue messages a runner refused
at once (not a task record for the queue, or not signed by a principal it trusts), with their
capability, state.attempts (the number of deliveries it had) and the reason recorded.

Options:
  -c, --capability <name>  only this capability's dead letters
  --limit <n>              at most n records (default 100)
${SERVER_HELP}
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, listOptions);
    positionals(given, []);
    const { runDeadLetters } = await import('./records.ts');
    return runDeadLetters(
      {
        server: natsServerUrl(values),
        json: values.json ?? false,
        capability: capabilityOption(values.capability),
        limit: intOption(values.limit, 'limit', 1) ?? 100,
      },
      ctx,
    );
  },
};

const requeueCommand: Command = {
  name: 'requeue',
  summary: 'move dead letters back to their queue',
  help: `Usage: tapctl nats requeue <task_id>… | --all [--capability <name>] [--server <url>] [--json]

Publishes each dead letter again to its capability's queue as a new message, with attempts 0,
status "pending" and the old error kept under metadata["x-requeued"], so the server counts its
deliveries from one again (a new attempt series); once the queue has acknowledged it, the dead
letter is deleted from TAP_DEAD. An id that is not a dead letter fails before anything moves, and
so does a dead letter that stands for a message that was not a task record (--all leaves those).

Options:
  --all                    requeue every dead letter (of --capability, if given)
  -c, --capability <name>  with --all: only this capability's dead letters
${SERVER_HELP}
`,
  async run(args, ctx) {
    const { values, positionals: ids } = parseOptions(args, {
      ...common,
      all: { type: 'boolean' },
      capability: { type: 'string', short: 'c' },
    });
    if (values.all && ids.length > 0) throw new CliError('give task ids or --all, not both', { usage: true });
    if (!values.all && ids.length === 0) throw new CliError('missing <task_id> (or --all)', { usage: true });
    if (values.capability && !values.all) throw new CliError('--capability goes with --all', { usage: true });
    const { runRequeue } = await import('./requeue.ts');
    return runRequeue(
      {
        server: natsServerUrl(values),
        json: values.json ?? false,
        ids: values.all ? 'all' : ids,
        capability: capabilityOption(values.capability),
      },
      ctx,
    );
  },
};

const submitCommand: Command = {
  name: 'submit',
  summary: 'queue a durable task and optionally wait for its result',
  help: `Usage: tapctl nats submit <capability> <input-json> [--idempotency-key <key>] [--signing-key <file>] [--wait] [options]

Queues a task record for <capability> on TAP_TASKS with <input-json> as its input, checked
against task-record.schema.json. With --idempotency-key the submit carries the key (and
--principal): within the stream's de-duplication window the server drops a repeat, past it the
runner's TAP_IDEMPOTENCY bucket does; a repeat reports the task that holds the key. With
--signing-key the record carries the signature of the key's principal, who is then the principal
of its idempotency key; runners started with a trust file run only signed records. With --wait
it waits for the finished record in TAP_RESULTS and exits 0 if the task completed, 1 if not.

Options:
  --idempotency-key <key>  the TAP idempotency key of this submit
  --principal <name>       whose key it is (default: the signing key's principal, else "tapctl")
  --signing-key <file>     sign the record with this Ed25519 key (tapctl nats permissions writes them)
  --wait                   wait for the result
  --timeout <ms>           how long --wait waits (default 60000)
  --create-streams         create the TAP streams when missing (else a missing stream is an error)
  --replicas <n>           replicas of streams it creates (default 3 on a cluster of three
                           servers or more, 1 on a single server)
${SERVER_HELP}
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      ...common,
      'idempotency-key': { type: 'string' },
      principal: { type: 'string' },
      'signing-key': { type: 'string' },
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
      'create-streams': { type: 'boolean' },
      replicas: { type: 'string' },
    });
    const [capability, inputText] = positionals(given, ['capability', 'input-json']);
    let input: unknown;
    try {
      input = JSON.parse(inputText!);
    } catch (err) {
      throw new CliError(`<input-json> is not JSON: ${(err as Error).message}`, {
        usage: true,
        hint: `Quote it for the shell, e.g. '{"key":"a"}', or '"text"' for a string.`,
      });
    }
    const { runSubmit } = await import('./submit.ts');
    return runSubmit(
      {
        server: natsServerUrl(values),
        json: values.json ?? false,
        capability: capability!,
        input,
        idempotencyKey: values['idempotency-key'],
        principal: values.principal,
        signingKey: values['signing-key'],
        wait: values.wait ?? false,
        timeoutMs: intOption(values.timeout, 'timeout', 1) ?? 60_000,
        createStreams: values['create-streams'] ?? false,
        replicas: intOption(values.replicas, 'replicas', 1),
      },
      ctx,
    );
  },
};

const permissionsCommand: Command = {
  name: 'permissions',
  summary: 'write the nats-server users and permissions, keys and trust file of a deployment',
  help: `Usage: tapctl nats permissions --out <server.conf> [--agent <id>]… [--runner <id>]… [--requester <id>]…
                             [--operator <id>]… [--keys-dir <dir>] [--url nats://host:port] [--json]

Writes the nats-server configuration (an authorization block of static users, NATS Server 2.9)
that gives each principal the permissions of its roles in the NATS binding's permission model
(spec: bindings-nats#security):

  agent      its own sessions (open, in, out of its id) and its own registry entry
  runner     the durable queue: consumes TAP_TASKS and TAP_ADVISORIES, writes TAP_EVENTS,
             TAP_RESULTS, TAP_DEAD and TAP_IDEMPOTENCY
  requester  sessions with every --agent, submits to TAP_TASKS, reads results, task streams
             and the registry; writes nothing else
  operator   everything

Each principal is one NATS user named by its id, with its own inbox prefix _INBOX_<id>. A principal
with several roles (--agent a.b --runner a.b) gets them all. In --keys-dir (default: keys/ beside
--out) it writes an Ed25519 key per principal (<id>.key.json), the trust file of all of them
(trust.json) and each user's password (credentials.json); keys and passwords already there are
kept. Files with secrets are readable by their owner only.

Options:
  --agent <id>         an agent; repeat for several
  --runner <id>        a durable runner (usually an agent's id too); repeat for several
  --requester <id>     a requester; repeat for several
  --operator <id>      an operator; repeat for several
  --out <file>         where the server configuration goes
  --keys-dir <dir>     where the keys, trust file and passwords go (default: keys/ beside --out)
  --url <url>          the server's nats://host:port: credentials.json then gives each principal's URL
  --json               print what was written as JSON
`,
  async run(args, ctx) {
    const { values, positionals: given } = parseOptions(args, {
      agent: { type: 'string', multiple: true },
      runner: { type: 'string', multiple: true },
      requester: { type: 'string', multiple: true },
      operator: { type: 'string', multiple: true },
      out: { type: 'string' },
      'keys-dir': { type: 'string' },
      url: { type: 'string' },
      json: { type: 'boolean' },
    });
    positionals(given, []);
    const list = (v: unknown): string[] => (v as string[] | undefined) ?? [];
    const deployment = {
      agents: list(values.agent),
      runners: list(values.runner),
      requesters: list(values.requester),
      operators: list(values.operator),
    };
    if (Object.values(deployment).every((ids) => ids.length === 0))
      throw new CliError('no principals: give at least one --agent, --runner, --requester or --operator', { usage: true });
    if (values.out === undefined)
      throw new CliError('missing --out <file>: where the server configuration goes', {
        usage: true,
        hint: 'e.g. --out deploy/server.conf',
      });
    const { runGrant } = await import('./grant.ts');
    return runGrant({ ...deployment, out: values.out, keysDir: values['keys-dir'], url: values.url, json: values.json ?? false }, ctx);
  },
};

const removeConsumerCommand: Command = {
  name: 'remove-consumer',
  summary: "delete a queue's consumer that no runner serves any more",
  help: `Usage: tapctl nats remove-consumer <name>… [--force] [--server <url>] [--json]

Deletes each named consumer of TAP_TASKS (tap-<capability>, as tapctl nats status and tap-conform
name them) and the consumer of the same name on TAP_ADVISORIES, through which the runners of the
capability take its max-deliveries advisories. The next runner of the capability creates both
afresh, with its own lease and maximum deliveries. The queue's records stay on TAP_TASKS, and
advisories not yet answered on TAP_ADVISORIES: a work queue keeps a message until a consumer
acknowledges it. Every name is checked before anything is removed: an unknown consumer, or one a
runner pulls from, fails the command and removes nothing.

Options:
  --force             remove a consumer even though a runner pulls from it
${SERVER_HELP}
`,
  async run(args, ctx) {
    const { values, positionals: names } = parseOptions(args, { ...common, force: { type: 'boolean' } });
    if (names.length === 0)
      throw new CliError('missing <name>: the consumer of TAP_TASKS to remove', {
        usage: true,
        hint: "tapctl nats status lists the queue's consumers, e.g. tap-tap_test_echo.",
      });
    const { runRemoveConsumer } = await import('./consumers.ts');
    return runRemoveConsumer({ server: natsServerUrl(values), json: values.json ?? false, names, force: values.force ?? false }, ctx);
  },
};

export const natsCommand = commandGroup(
  'nats',
  'Operate the durable tasks of the NATS binding: the JetStream queues, dead letters and results.',
  [statusCommand, tasksCommand, deadLettersCommand, requeueCommand, submitCommand, removeConsumerCommand, permissionsCommand],
);
