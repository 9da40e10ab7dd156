/**
 * One consumer of the durable row's ceiling: the JetStream operations a durable runner makes for a
 * task, by the bare client and nothing else (spec: bindings-nats#task-queue, #event-streams). Per
 * first delivery: parse the record; store two messages in the task's event stream (the running
 * event, on the condition that the stream is empty, and the task.result, each with its message id,
 * awaiting the server's acknowledgement); store the finished record in the results stream (its
 * message id too); acknowledge the delivery. Up to --batch deliveries at once, as a runner. The streams are
 * those `ensureStreams` makes under --prefix (TAP's configuration, other names). Prints "ready".
 */
import { parseArgs } from 'node:util';
import { connect, headers } from '@nats-io/transport-node';
import { jetstream, type JsMsg } from '@nats-io/jetstream';

const { values } = parseArgs({
  options: {
    server: { type: 'string' },
    prefix: { type: 'string' },
    stream: { type: 'string' },
    consumer: { type: 'string' },
    batch: { type: 'string' },
  },
});
const prefix = values.prefix!;
const nc = await connect({ servers: values.server!, noAsyncTraces: true });
const js = jetstream(nc);
const consumer = await js.consumers.get(values.stream!, values.consumer!);
const batch = Number(values.batch ?? 8);
const messages = await consumer.consume({ max_messages: batch, threshold_messages: Math.max(1, Math.floor(batch / 2)) });
process.on('SIGTERM', () => void nc.close().finally(() => process.exit(0)));
process.stdout.write('ready\n');

let n = 0;
/** A stream message of the task, the members a runner's messages have. */
const streamMessage = (taskId: string, sequence: number, type: string, payload: unknown): string =>
  JSON.stringify({
    protocol: 'tap/1.0',
    message_id: `bench-${process.pid}-${n++}`,
    type,
    source: 'bench.ceiling',
    target: '*',
    timestamp: new Date().toISOString(),
    task_id: taskId,
    sequence,
    payload,
  });

async function work(m: JsMsg): Promise<void> {
  const record = JSON.parse(m.string()) as { task_id: string; context: { current_input: unknown }; state: Record<string, unknown> };
  const id = record.task_id;
  const events = `${prefix}.events.${id}`;
  const first = headers();
  first.set('Tap-Attempt', '0');
  first.set('Nats-Expected-Last-Subject-Sequence', '0');
  await js.publish(events, streamMessage(id, 1, 'task.event', { kind: 'state', state: 'running' }), { msgID: `${id}:1`, headers: first });
  const h = headers();
  h.set('Tap-Attempt', '0');
  const output = record.context.current_input;
  await js.publish(events, streamMessage(id, 2, 'task.result', { status: 'completed', output }), { msgID: `${id}:2`, headers: h });
  const finished = { ...record, state: { ...record.state, status: 'completed', attempts: 0, finished_at: new Date().toISOString() } };
  await js.publish(`${prefix}.results.${id}`, JSON.stringify(finished), { msgID: `${id}:result` });
  m.ack();
}

const running = new Set<Promise<void>>();
for await (const m of messages) {
  const p = work(m).catch((err: Error) => void process.stderr.write(`${err.message}\n`));
  running.add(p);
  void p.finally(() => running.delete(p));
  while (running.size >= batch) await Promise.race(running);
}
