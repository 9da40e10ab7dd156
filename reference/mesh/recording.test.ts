/**
 * A trace file of an agent's sessions (spec: mesh#trace-records): every record given before
 * `close()` is in the file when it resolves — an agent closes it after it stopped and before its
 * process exits, which would otherwise drop the records still queued (the result of a task that
 * ended just before a signal).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryPair } from '../transports/memory.ts';
import { recordSessionsToFile } from './recording.ts';
import type { TraceRecord } from './trace.ts';

const dir = mkdtempSync(join(tmpdir(), 'tap-recording-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A task.result of task `n`, under a trace. */
const result = (n: number): string =>
  JSON.stringify({
    type: 'task.result',
    message_id: `m-${n}`,
    task_id: `task-${n}`,
    source: 'traced.agent',
    target: 'trace.requester',
    metadata: { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' },
    payload: { status: 'completed', output: { n } },
  });

describe('recordSessionsToFile', () => {
  it('has written every record given before close() when it resolves, and takes none after', async () => {
    const file = join(dir, 'agent.jsonl');
    const errors: Error[] = [];
    const recording = await recordSessionsToFile('traced.agent', file, (err) => errors.push(err));
    const [agentSide, requesterSide] = createMemoryPair();
    const traced = recording.wrap(agentSide);
    await traced.start();
    await requesterSide.start();
    for (let n = 0; n < 2000; n++) void traced.send(result(n));
    // Two closes at once (the agent's stop and another closer) both wait for the whole file.
    await Promise.all([recording.close(), recording.close()]);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(2000);
    const last = JSON.parse(lines.at(-1)!) as TraceRecord;
    expect(last).toMatchObject({ node: 'traced.agent', dir: 'sent', type: 'task.result', task_id: 'task-1999', status: 'completed' });
    // A frame of a session still ending after the file closed is not recorded, and is no error.
    await traced.send(result(2000));
    await recording.close();
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(2000);
    expect(errors).toEqual([]);
  });
});
