/**
 * The monitoring of an agent process as an operator uses it: the reference agent started with
 * --metrics-port and TAP_AUDIT_FILE, `curl` reading its /healthz and /metrics, tapctl health and
 * metrics reading the same, and tapctl audit verify checking the trail it left after SIGTERM.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectWs } from '../client/index.ts';
import { parseExposition, sampleValue } from '../ops/exposition-parse.ts';
import { tapctl } from '../tapctl/tapctl.testkit.ts';

const AGENT = new URL('../../dist/reference/agents/reference-agent.js', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'tap-monitoring-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function curl(url: string): { status: number; body: string } {
  const r = spawnSync('curl', ['-s', '-w', '\n%{http_code}', url], { encoding: 'utf8', timeout: 10_000 });
  const at = r.stdout.lastIndexOf('\n');
  return { status: Number(r.stdout.slice(at + 1)), body: r.stdout.slice(0, at) };
}

describe('a running agent, monitored', () => {
  it('curl gets health and metrics from it, tapctl reads them, and its audit trail verifies after SIGTERM', async () => {
    const audit = join(dir, 'audit.jsonl');
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP_')));
    const child = spawn(process.execPath, [AGENT, '--listen', 'ws://127.0.0.1:0/tap', '--metrics-port', '0'], {
      env: { ...base, TAP_CONFORMANCE: '1', TAP_AUDIT_FILE: audit },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()));
        void exited.then((code) => reject(new Error(`the agent exited with ${code}: ${stderr}`)));
      });
      const monitoring = /metrics at (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(stderr)?.[1];
      expect(monitoring, stderr).toBeDefined();

      const health = curl(`${monitoring}/healthz`);
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toMatchObject({ status: 'ready', agent_id: 'tap.reference-agent', audit: { file: audit, seq: 0 } });

      const client = await connectWs(url, { agentId: 'example.requester', requires: ['tap.test.echo'] });
      expect((await client.submit('tap.test.echo', { hello: 'metrics' }).result).status).toBe('completed');
      await client.close();

      const metrics = curl(`${monitoring}/metrics`);
      expect(metrics.status).toBe(200);
      const families = parseExposition(metrics.body);
      expect(sampleValue(families, 'tap_tasks_finished_total', { capability: 'tap.test.echo', outcome: 'completed' })).toBe(1);
      expect(sampleValue(families, 'tap_task_duration_seconds_count', { capability: 'tap.test.echo' })).toBe(1);
      expect(curl(`${monitoring}/nope`).status).toBe(404);

      const read = await tapctl('health', monitoring!);
      expect(read.code).toBe(0);
      expect(read.out).toMatch(/^tap\.reference-agent: ready \(HTTP 200\)/);
      const samples = await tapctl('metrics', monitoring!, '--match', 'tap_tasks_finished_total');
      expect(samples.out).toContain('tap_tasks_finished_total{capability="tap.test.echo",outcome="completed"} 1');

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const verified = await tapctl('audit', 'verify', audit);
      expect(verified.code, verified.err).toBe(0);
      expect(verified.out).toMatch(/^ok: 1 records in 1 file chain; head: record 1, sha256 [0-9a-f]{64}\n$/);
    } finally {
      child.kill('SIGKILL');
    }
  }, 40_000);
});
