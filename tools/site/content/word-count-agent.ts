// agent.ts: a complete TAP agent with one capability, text.word-count, plus the conformance
// capabilities, served over stdio.
import { createAgent, type TaskContext, withConformanceCapabilities } from 'tap-agent-protocol/agent';

const agent = createAgent({
  card: {
    agent_id: 'example.word-counter',
    name: 'Word counter',
    description: 'Counts the words of a plain text. It does not understand markup or code.',
    capabilities: [],
    limits: { max_concurrent_tasks: 8, max_task_seconds: 60, max_message_bytes: 1_048_576 },
  },
  capabilities: withConformanceCapabilities({
    'text.word-count': {
      capability: {
        name: 'text.word-count',
        version: '1.0.0',
        description: 'Counts the words of { "text": string }.',
        input_formats: ['json'],
        output_formats: ['json'],
        streaming: false,
        side_effects: false,
      },
      // Checked by the runtime before the handler runs: a bad input is refused with INVALID_MESSAGE.
      inputSchema: { type: 'object', required: ['text'], properties: { text: { type: 'string' } } },
      handler: async (input: { text: string }, ctx: TaskContext) => {
        ctx.progress({ stage: 'counting' });
        const words = input.text.split(/\s+/).filter((w) => w !== '');
        return { words: words.length };
      },
    },
  }),
});

// One session on stdin/stdout; logs go to stderr, stdout carries only TAP messages.
await agent.serveStdio();
await agent.shutdown('the session is over');
process.exit(0);
