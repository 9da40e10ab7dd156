/**
 * OpenTelemetry spans of the client and the agent, in memory: a task's span is the child of the
 * requester's span, the traceparent on the wire names the span that sent it, a handler's
 * submission is a child of its task's span and carries the delegation path, and an agent refuses
 * a task that comes back to it (spec: envelope#trace-context, mesh#delegation).
 */
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import type { AgentCard } from '../schemas/src/index.ts';
import { createAgent, type Agent, type TaskContext } from './agent/index.ts';
import { connect, type TapClient } from './client/index.ts';
import { TapClientError } from './client/errors.ts';
import { parseTraceparent } from './core/index.ts';
import { createMemoryPair } from './transports/index.ts';
import { cleanupsAfterEach } from './client/reference-agent.testkit.ts';

const cleanups = cleanupsAfterEach();

function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, tracer: provider.getTracer('test') };
}

function card(agentId: string, capability: string): AgentCard {
  return {
    agent_id: agentId,
    name: agentId,
    description: 'a test agent',
    capabilities: [
      {
        name: capability,
        version: '1.0.0',
        description: capability,
        input_formats: ['json'],
        output_formats: ['json'],
        streaming: false,
        side_effects: false,
      },
    ],
    limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 65536 },
  };
}

type Handler = (input: unknown, ctx: TaskContext) => unknown;

/** An agent of one capability; its handler may reach the clients it is given by name. */
function agent(agentId: string, capability: string, handler: Handler, tracer?: ReturnType<typeof tracing>['tracer']): Agent {
  const a = createAgent({
    card: card(agentId, capability),
    capabilities: { [capability]: { capability: card(agentId, capability).capabilities[0]!, handler } },
    logger: () => {},
    ...(tracer ? { telemetry: { tracer } } : {}),
  });
  cleanups.push(() => a.shutdown());
  return a;
}

async function clientOf(a: Agent, agentId: string, tracer?: ReturnType<typeof tracing>['tracer']): Promise<TapClient> {
  const [x, y] = createMemoryPair();
  a.attach(y);
  const c = await connect(x, { agentId, ...(tracer ? { telemetry: { tracer } } : {}) });
  cleanups.push(() => c.close());
  return c;
}

const byName = (spans: ReadableSpan[], name: string) => spans.find((s) => s.name === name)!;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('OpenTelemetry spans', () => {
  it("an agent's task span is the child of the requester's span, whose id the request's traceparent carries", async () => {
    const { exporter, tracer } = tracing();
    const echo = agent('x.echo', 'x.echo', (input) => input, tracer);
    const client = await clientOf(echo, 'x.requester', tracer);
    const h = client.submit('x.echo', { a: 1 });
    expect((await h.result).status).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const submit = byName(spans, 'submit x.echo');
    const task = byName(spans, 'execute x.echo');
    expect(parentOf(task)).toBe(submit.spanContext().spanId);
    expect(task.spanContext().traceId).toBe(submit.spanContext().traceId);
    expect(parseTraceparent(h.trace?.traceparent)).toMatchObject({
      traceId: submit.spanContext().traceId,
      parentId: submit.spanContext().spanId,
    });
    expect(task.attributes).toMatchObject({
      'tap.task_id': h.taskId,
      'tap.capability': 'x.echo',
      'tap.attempt': 1,
      'tap.agent': 'x.echo',
      'tap.outcome': 'completed',
    });
    expect(submit.attributes).toMatchObject({ 'tap.task_id': h.taskId, 'tap.agent': 'x.echo', 'tap.outcome': 'completed' });
  });

  it("a handler's submission is a child of its task's span and carries the delegation path; a task that comes back is refused DELEGATION_LOOP (spec: mesh#delegation)", async () => {
    const { exporter, tracer } = tracing();
    const seen: Array<readonly string[]> = [];
    // A → B → A: B delegates back to A, which refuses it; B's submission never reaches A's handler twice.
    const toA: { client?: TapClient } = {};
    const toB: { client?: TapClient } = {};
    const a = agent(
      'x.a',
      'x.plan',
      async (input, ctx) => {
        seen.push(ctx.delegation);
        const r = await toB.client!.submit('x.work', input, { retry: { attempts: 1 } }).result;
        return r;
      },
      tracer,
    );
    const b = agent(
      'x.b',
      'x.work',
      async (input, ctx) => {
        seen.push(ctx.delegation);
        return toA.client!.submit('x.plan', input).result;
      },
      tracer,
    );
    toB.client = await clientOf(b, 'x.a', tracer);
    toA.client = await clientOf(a, 'x.b', tracer);
    const requester = await clientOf(a, 'x.requester', tracer);
    const h = requester.submit('x.plan', { go: 1 });
    const result = await h.result;
    // B's client refused to send the task back to A; B's handler failed with it, and A's task ends with B's failed result.
    expect(seen).toEqual([['x.a'], ['x.a', 'x.b']]);
    expect(JSON.stringify(result)).toContain('already on the delegation path x.a → x.b');
    const spans = exporter.getFinishedSpans();
    const planTask = spans.find((s) => s.name === 'execute x.plan')!;
    const toWork = spans.find((s) => s.name === 'submit x.work')!;
    const workTask = spans.find((s) => s.name === 'execute x.work')!;
    const back = spans.find((s) => s.name === 'submit x.plan' && parentOf(s) === workTask.spanContext().spanId)!;
    expect(parentOf(toWork)).toBe(planTask.spanContext().spanId);
    expect(parentOf(workTask)).toBe(toWork.spanContext().spanId);
    expect(back.attributes).toMatchObject({ 'tap.outcome': 'failed', 'error.type': 'DELEGATION_LOOP' });
    expect(spans.filter((s) => s.name === 'execute x.plan')).toHaveLength(1);
  });

  it('a client without telemetry takes an explicit delegation path and refuses, unsent, a task to an agent on it (TAP-MESH-152)', async () => {
    const a = agent('x.a', 'x.plan', (input) => input);
    let failure: unknown;
    const b = agent('x.b', 'x.work', async (input, ctx) => {
      const back = await clientOf(a, 'x.b');
      try {
        await back.submit('x.plan', input, { delegation: [...ctx.delegation, 'x.a'] }).result;
      } catch (err) {
        failure = err;
      }
      return ctx.delegation;
    });
    const client = await clientOf(b, 'x.a');
    const r = await client.submit('x.work', 1, { delegation: ['x.root'] }).result;
    expect(r).toMatchObject({ status: 'completed', output: ['x.root', 'x.b'] });
    expect(failure).toBeInstanceOf(TapClientError);
    expect(failure).toMatchObject({ code: 'DELEGATION_LOOP', unsent: true });
  });
});
