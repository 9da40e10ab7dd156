/** TAP operated as in production, for the bench rows that measure what tracing and the audit trail cost. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentOptions } from '../../dist/reference/agent/index.js';
import type { ConnectOptions } from '../../dist/reference/client/index.js';

/**
 * What an operated agent and client add: a tracer whose spans go through the SDK's batch processor
 * to an exporter that drops them (the cost is making and ending the spans, not shipping them), and
 * an audit file in a folder of its own.
 */
export async function operated(): Promise<{
  agent: Partial<AgentOptions>;
  client: Pick<ConnectOptions, 'telemetry'>;
  close: () => Promise<void>;
}> {
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const dropping = { export: (_spans: unknown[], done: (r: { code: 0 }) => void) => done({ code: 0 }), shutdown: async () => {} };
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] });
  const tracer = provider.getTracer('tap-bench');
  const dir = mkdtempSync(join(tmpdir(), 'tap-bench-audit-'));
  return {
    agent: { telemetry: { tracer }, audit: { file: join(dir, 'audit.jsonl') } },
    client: { telemetry: { tracer } },
    close: async () => {
      await provider.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
