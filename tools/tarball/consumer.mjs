// A plain JavaScript consumer of the installed package: one task round trip in memory through the
// main entry, the client and the transports; a data table from ./schemas/*; and a short
// conformance run of the example agent (consumer-agent.mjs, copied beside this file as agent.js) through ./conformance.
import { execFileSync } from 'node:child_process';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, createAgent, withConformanceCapabilities } from 'tap-agent-protocol';
import { connect as connectClient } from 'tap-agent-protocol/client';
import { runConformance } from 'tap-agent-protocol/conformance';
import { createMemoryPair } from 'tap-agent-protocol/transports';
import errorCodes from 'tap-agent-protocol/schemas/error-codes.json' with { type: 'json' };

if (connect !== connectClient) throw new Error('the main entry and ./client export different connect functions');

const agent = createAgent({
  card: {
    agent_id: 'example.upper',
    name: 'Upper case',
    description: 'Returns its text in upper case.',
    capabilities: [],
    limits: { max_concurrent_tasks: 4, max_task_seconds: 10, max_message_bytes: 65_536 },
  },
  capabilities: withConformanceCapabilities({
    'text.upper': {
      capability: {
        name: 'text.upper',
        version: '1.0.0',
        description: 'Upper-cases { "text": string }.',
        input_formats: ['json'],
        output_formats: ['json'],
        streaming: false,
        side_effects: false,
      },
      handler: async (input) => ({ text: String(input.text).toUpperCase() }),
    },
  }),
});
const [near, far] = createMemoryPair();
agent.attach(far);
const client = await connect(near, { agentId: 'example.mjs-requester', requires: ['text.upper'] });
const result = await client.submit('text.upper', { text: 'tap' }).result;
await client.close();
await agent.shutdown('done');
if (result.status !== 'completed' || result.output?.text !== 'TAP') throw new Error(`unexpected result ${JSON.stringify(result)}`);

// The build compiles every published schema ahead of time: a process that only runs an agent whose
// capabilities use published schemas (or none) never loads Ajv's schema compiler. Checked in a
// process of its own (this one loads tap-conform, which compiles the schemas itself); Ajv's
// small run-time helper, which the compiled validators import, shows the module cache is visible.
const probe = `import { createRequire } from 'node:module';
import { createAgent, withConformanceCapabilities } from 'tap-agent-protocol/agent';
createAgent({
  card: { agent_id: 'example.probe', name: 'Probe', description: 'Start-up probe.', capabilities: [],
    limits: { max_concurrent_tasks: 1, max_task_seconds: 10, max_message_bytes: 65536 } },
  capabilities: withConformanceCapabilities({}),
});
const loaded = Object.keys(createRequire(import.meta.url).cache);
console.log(JSON.stringify({
  compiler: loaded.filter((k) => /[\\\\/]ajv[\\\\/]dist[\\\\/](core|compile[\\\\/]index)\\.js$/.test(k)),
  helper: loaded.some((k) => /[\\\\/]ajv[\\\\/]dist[\\\\/]runtime[\\\\/]ucs2length\\.js$/.test(k)),
}));`;
const startup = JSON.parse(
  execFileSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: dirname(fileURLToPath(import.meta.url)), encoding: 'utf8' }),
);
if (startup.compiler.length > 0) throw new Error(`an agent loaded a schema compiler at start-up: ${startup.compiler.join(', ')}`);
if (!startup.helper) throw new Error('the compiled validators did not load their run-time helper');

const codes = errorCodes.codes.length;
const report = await runConformance({
  target: [process.execPath, new URL('./agent.js', import.meta.url).pathname],
  only: ['core.handshake.complete'],
});
const summary = { round_trip: result.output, error_codes: codes, cases: report.cases.length, passed: report.summary.PASS };
console.log(JSON.stringify(summary));
if (report.cases.length === 0 || report.summary.PASS !== report.cases.length)
  throw new Error(`conformance: ${JSON.stringify(report.summary)}`);
