/**
 * One agent process of the mesh demo: an analyst, a coder, a reviewer or a router, serving its
 * capability through NATS and joined to the mesh's registry (spec: registry, mesh). The router
 * forwards each task to whichever agent the mesh finds for the capability it names, passing the
 * trace on (spec: mesh#trace).
 *
 *   node --import tsx reference/agents/mesh-demo/agent.ts --role coder --id mesh-demo.coder-1 --nats URL --logs DIR
 */
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CapabilityDefinition, TaskContext } from '../../agent/index.ts';
import { hostAgents } from '../../mesh/agent-host.ts';
import { connectMesh } from '../../mesh/connect.ts';
import type { Mesh } from '../../mesh/mesh.ts';
import { jsonLines } from '../../mesh/trace.ts';
import { capability } from '../demo/common.ts';

const { values } = parseArgs({
  options: { role: { type: 'string' }, id: { type: 'string' }, nats: { type: 'string' }, logs: { type: 'string' } },
});
const role = values.role ?? '';
const id = values.id ?? `mesh-demo.${role}`;
const url = values.nats ?? '';

let router: Mesh | undefined;

const ROLES: Record<string, Record<string, CapabilityDefinition>> = {
  analyst: {
    'demo.analyze': {
      capability: capability('demo.analyze', 'Turns a feature request into a short specification.'),
      handler: async (input: { request: string }, ctx: TaskContext) => {
        ctx.progress({ percent: 50, stage: 'reading the request' });
        await ctx.sleep(300);
        return { spec: `A function ${input.request.replace(/\W+/g, '_').toLowerCase()} with tests.`, steps: ['write', 'test'] };
      },
    },
  },
  coder: {
    'demo.code': {
      capability: capability('demo.code', 'Writes code for a specification, step by step; no side effects outside the task.'),
      handler: async (input: { spec: string }, ctx: TaskContext) => {
        for (let step = 1; step <= 4; step++) {
          ctx.progress({ percent: step * 25, stage: `writing part ${step} of 4` });
          await ctx.sleep(400);
        }
        return { code: `// ${input.spec}\nexport function solution() { return 42; }\n`, by: id, attempt: ctx.attempt };
      },
    },
  },
  reviewer: {
    'demo.review': {
      capability: capability('demo.review', 'Reviews code and approves it or asks for changes.'),
      handler: async (input: { code: string }, ctx: TaskContext) => {
        ctx.progress({ percent: 50, stage: 'reading the code' });
        await ctx.sleep(300);
        return { approved: input.code.includes('solution'), notes: 'Small, clear, tested.' };
      },
    },
  },
  router: {
    'demo.route': {
      capability: capability('demo.route', 'Forwards { capability, input } to an agent of the mesh that offers it.'),
      handler: async (input: { capability: string; input: unknown }, ctx: TaskContext) => {
        const onward = await router!.task(input.capability, input.input, ctx.trace ? { trace: ctx.trace } : {});
        const result = await onward.result;
        return { via: onward.agentId, result: result.output ?? result.error };
      },
    },
  },
};

if (!ROLES[role] || !url) {
  process.stderr.write(`mesh-demo agent: give --role ${Object.keys(ROLES).join('|')} and --nats URL\n`);
  process.exit(2);
}
if (role === 'router') {
  router = await connectMesh(url, {
    agentId: id,
    ...(values.logs ? { traceSink: jsonLines(createWriteStream(join(values.logs, `${id}.jsonl`))) } : {}),
  });
}
const host = await hostAgents({
  url,
  ids: [id],
  heartbeatMs: 250,
  ttlMs: 1000,
  capabilities: () => ROLES[role]!,
  ...(values.logs ? { traceDir: values.logs } : {}),
  describe: () => `The ${role} of the TAP mesh demo.`,
});
process.stdout.write('ready\n');
const stop = (): void => {
  void host
    .stop('the demo is over')
    .then(() => router?.close())
    .then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
