/** The MCP server's process: its environment and how its end is told (spec: bridge-mcp-server#shutdown). */
import { describe, expect, it } from 'vitest';
import { describeExit, serverEnvironment } from './mcp-process.ts';

describe('the MCP server process (spec: bridge-mcp-server#shutdown)', () => {
  it('gets the bridge environment without the TAP_* variables of a conformance run (TAP-BRIDGE-123)', () => {
    const env = serverEnvironment({ PATH: '/bin', MEMORY_FILE_PATH: '/tmp/m.json', TAP_HMAC_KEY: 'secret', TAP_CONFORMANCE: '1' });
    expect(env).toEqual({ PATH: '/bin', MEMORY_FILE_PATH: '/tmp/m.json' });
  });

  it('tells an exit by its status or by its signal', () => {
    expect(describeExit({ code: 7, signal: null })).toBe('exited with status 7');
    expect(describeExit({ code: null, signal: 'SIGKILL' })).toBe('was ended by SIGKILL');
  });
});
