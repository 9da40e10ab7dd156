import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseExposition, sampleValue } from '../ops/exposition-parse.ts';
import { verifyAuditFiles } from '../ops/audit-verify.ts';
import { agentCard, testAgent, TestPeer } from './peer.testkit.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** One HTTP request: status, headers and body. */
function http(url: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('health, metrics and the audit trail of an agent', () => {
  it('with metrics: false counts nothing per task: the counted series are left out, the gauges and the audit trail stay', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-monitoring-'));
    dirs.push(dir);
    const file = join(dir, 'audit.jsonl');
    const agent = testAgent({ card: agentCard(), audit: { file }, metrics: false });
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('ok', 'tap.test.echo', { hi: 1 });
    await peer.result('ok');
    const families = parseExposition(await agent.metrics());
    expect(sampleValue(families, 'tap_sessions_open')).toBe(1);
    expect(sampleValue(families, 'tap_tasks', { state: 'completed' })).toBe(1);
    expect(sampleValue(families, 'tap_audit_records_total')).toBe(1);
    for (const name of ['tap_tasks_accepted_total', 'tap_tasks_finished_total', 'tap_requests_refused_total', 'tap_task_duration_seconds'])
      expect([...families.keys()]).not.toContain(name);
    await agent.shutdown();
  });

  it('counts tasks by state and outcome, BUSY refusals and durations, and audits each finished task', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-monitoring-'));
    dirs.push(dir);
    const file = join(dir, 'audit.jsonl');
    const agent = testAgent({ card: agentCard({ max_concurrent_tasks: 1 }), audit: { file } });
    const peer = new TestPeer(agent);
    await peer.handshake();
    peer.request('ok', 'tap.test.echo', { hi: 1 }, {}, { idempotency_key: 'key-1', metadata: { trace_id: 'trace-1' } });
    await peer.result('ok');
    peer.request('bad', 'tap.test.fail', { code: 'CAPABILITY_FAILED' });
    await peer.result('bad');
    peer.request('long', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 'long' && m.payload?.state === 'running');
    const busy = peer.request('refused', 'tap.test.echo', 1);
    expect((await peer.reply(busy.message_id)).payload.code).toBe('BUSY');

    const families = parseExposition(await agent.metrics());
    expect(sampleValue(families, 'tap_sessions_open')).toBe(1);
    expect(sampleValue(families, 'tap_tasks', { state: 'running' })).toBe(1);
    expect(sampleValue(families, 'tap_tasks', { state: 'completed' })).toBe(1);
    expect(sampleValue(families, 'tap_tasks_finished_total', { capability: 'tap.test.echo', outcome: 'completed' })).toBe(1);
    expect(sampleValue(families, 'tap_tasks_finished_total', { capability: 'tap.test.fail', outcome: 'failed' })).toBe(1);
    expect(sampleValue(families, 'tap_requests_refused_total', { code: 'BUSY' })).toBe(1);
    expect(sampleValue(families, 'tap_tasks_accepted_total')).toBe(3);
    expect(sampleValue(families, 'tap_task_duration_seconds_count')).toBe(2);
    expect(sampleValue(families, 'tap_audit_records_total')).toBe(2);

    await agent.shutdown();
    const verdict = verifyAuditFiles([file]);
    expect(verdict).toMatchObject({ ok: true, records: 3 });
    const records = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records[0]).toMatchObject({
      via: 'session',
      agent: 'test.agent',
      requester: 'test.requester',
      task_id: 'ok',
      capability: 'tap.test.echo',
      idempotency_key: 'key-1',
      trace_id: 'trace-1',
      outcome: 'completed',
    });
    // CAPABILITY_FAILED in a session of 1.1, INTERNAL_ERROR in one of 1.0.
    expect(records[1]).toMatchObject({
      task_id: 'bad',
      outcome: 'failed',
      error_code: expect.stringMatching(/^(CAPABILITY_FAILED|INTERNAL_ERROR)$/),
    });
    // The shutdown ended the sleeping task: its record is the third.
    expect(records[2]).toMatchObject({ task_id: 'long', outcome: 'cancelled', error_code: 'SHUTTING_DOWN' });
    expect(agent.health().status).toBe('stopped');
  });

  it('serves /healthz, /livez and /metrics on a port of its own: 503 while draining, 404 and 405 for the rest', async () => {
    const agent = testAgent();
    const peer = new TestPeer(agent);
    await peer.handshake();
    const monitoring = await agent.serveMonitoring({ port: 0 });
    expect(monitoring.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await http(`${monitoring.url}/healthz`);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ready', agent_id: 'test.agent', sessions: 1, running_tasks: 0 });
    expect((await http(`${monitoring.url}/livez`)).status).toBe(200);
    const metrics = await http(`${monitoring.url}/metrics`);
    expect(metrics.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(sampleValue(parseExposition(metrics.body), 'tap_agent_draining')).toBe(0);
    expect((await http(`${monitoring.url}/nothing`)).status).toBe(404);
    expect((await http(`${monitoring.url}/metrics`, 'POST')).status).toBe(405);
    expect((await http(`${monitoring.url}/healthz`, 'HEAD')).status).toBe(200);

    peer.request('long', 'tap.test.sleep', { ms: 60_000 });
    await peer.waitFor((m) => m.task_id === 'long' && m.payload?.state === 'running');
    // A shutdown hook holds the shutdown open while the endpoints are read (a mesh member withdraws its entry there).
    let release!: () => void;
    agent.onShutdown(() => new Promise<void>((resolve) => (release = resolve)));
    const stopping = agent.shutdown('maintenance');
    const draining = await http(`${monitoring.url}/healthz`);
    expect(draining.status).toBe(503);
    expect(JSON.parse(draining.body)).toMatchObject({ status: 'draining', running_tasks: 1 });
    expect((await http(`${monitoring.url}/livez`)).status).toBe(200);
    expect(sampleValue(parseExposition((await http(`${monitoring.url}/metrics`)).body), 'tap_agent_draining')).toBe(1);
    release();
    await stopping;
    // Once stopped, the endpoints are gone with the agent.
    await expect(http(`${monitoring.url}/healthz`)).rejects.toThrow();
  });

  it('answers the endpoints on the WebSocket port when asked, and 426 on any other plain request', async () => {
    const agent = testAgent();
    const listener = await agent.listen({ monitoring: true, path: '/tap' });
    const base = listener.url.replace(/^ws/, 'http').replace(/\/tap$/, '');
    try {
      expect((await http(`${base}/healthz`)).status).toBe(200);
      expect(sampleValue(parseExposition((await http(`${base}/metrics`)).body), 'tap_connections_open')).toBe(0);
      expect((await http(`${base}/tap`)).status).toBe(426);
    } finally {
      await agent.shutdown();
    }
    const plain = testAgent();
    const other = await plain.listen({});
    try {
      expect((await http(`${other.url.replace(/^ws/, 'http')}healthz`)).status).toBe(426);
    } finally {
      await plain.shutdown();
    }
  });
});
