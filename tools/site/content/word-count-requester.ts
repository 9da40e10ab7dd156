// requester.ts: starts the agent (compiled to agent.js beside this file), hands it one task and
// prints the result.
import { connect } from 'tap-agent-protocol/client';
import { spawnStdioTransport } from 'tap-agent-protocol/transports';

const agent = spawnStdioTransport(process.execPath, [new URL('./agent.js', import.meta.url).pathname]);
const client = await connect(agent, { agentId: 'example.requester', requires: ['text.word-count'] });
const result = await client.submit('text.word-count', { text: 'one two three' }).result;
console.log(JSON.stringify(result.output)); // {"words":3}
await client.close();
