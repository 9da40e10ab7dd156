// The example agent of consumer.mjs's conformance run: the package's runAgent with the conformance
// capabilities, over stdio (copied beside consumer.mjs as agent.js by the tarball test).
import { runAgent, withConformanceCapabilities } from 'tap-agent-protocol';

await runAgent({
  card: {
    agent_id: 'example.consumer-agent',
    name: 'Consumer agent',
    description: 'The conformance capabilities, served by an installed package.',
    capabilities: [],
    limits: { max_concurrent_tasks: 4, max_task_seconds: 10, max_message_bytes: 1_048_576 },
  },
  capabilities: withConformanceCapabilities({}),
});
