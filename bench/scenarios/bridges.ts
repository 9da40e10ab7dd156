/**
 * Scenario 10, the bridges' cost (spec: bridge-mcp-server, bridge-a2a): one cheap call through a
 * bridge against the same call made without it, in the same run, repetitions interleaved.
 *
 * - `bridge.mcp.*`: `tap-bridge mcp -- mcp-server-everything` served over TAP stdio, driven by the
 *   reference client (`mcp.echo`), against the same MCP server called directly by the MCP SDK's
 *   client over stdio (`echo`).
 * - `bridge.a2a.*`: `tap-bridge a2a` in front of the reference agent (`tap.test.echo`), driven by
 *   @a2a-js/sdk's client (sendMessage, blocking), against a plain @a2a-js/sdk server whose
 *   AgentExecutor echoes, driven by the same client.
 *
 * Every process is plain node on the package as built: the bins of bin/ (which run dist/), the MCP
 * server by its bin in node_modules/.bin, the plain A2A server a compiled peer script.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Message, SendMessageRequest } from '@a2a-js/sdk';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawnStdioTransport } from '../../dist/reference/transports/index.js';
import { nodeArgs, spawnScript, type LineChild } from '../lib/children.ts';
import { childrenCpuUs, ownCpuUs, processTree, type CpuPerTask } from '../lib/cpu.ts';
import { inflight, sequential, warmUp, type Call } from '../lib/measure.ts';
import type { Budget } from '../lib/options.ts';
import { peer, ROOT } from '../lib/paths.ts';
import { compare, missingBaseline, notRun, ratioRange, type Figure, type Row } from '../lib/report.ts';
import { spread } from '../lib/stats.ts';
import { closeWithin, echoInput, tapConnect } from '../lib/systems.ts';
import { cpuExtra, oneLine } from './roundtrip.ts';

const SCENARIO = '10. Bridges (tap-bridge against the same call without it)';
/** Calls in flight: the MCP bridge's card allows 8 tasks at once. */
const DEPTH = 8;
/**
 * Calls one bridge session makes in a run at most: the MCP bridge's agent keeps 4,096 finished
 * tasks per requester within their retention window and answers BUSY past them.
 */
const SESSION_CALLS = 3_600;
const EVERYTHING = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
const TAP_BRIDGE = join(ROOT, 'bin', 'tap-bridge.mjs');

/** One system of a bridge row: a call, the processes that serve it, a close. */
interface BridgeSystem {
  id: string;
  name: string;
  call: Call;
  /** The process that serves the calls; it and every process under it are counted as the serving side's CPU. */
  pid: number | undefined;
  close(): Promise<void>;
}

interface Pair {
  key: 'mcp' | 'a2a';
  label: string;
  bridge: () => Promise<BridgeSystem>;
  direct: () => Promise<BridgeSystem>;
}

const PAIRS: Pair[] = [
  {
    key: 'mcp',
    label: 'MCP server-everything echo over stdio',
    bridge: mcpThroughBridge,
    direct: mcpDirect,
  },
  {
    key: 'a2a',
    label: '@a2a-js/sdk client, sendMessage (blocking) over HTTP on 127.0.0.1',
    bridge: a2aFacade,
    direct: a2aPlain,
  },
];

const rowIdsOf = (key: string): string[] => [`bridge.${key}.sequential`, `bridge.${key}.inflight${DEPTH}`];

/** The row ids this scenario produces. */
export function bridgesRowIds(): string[] {
  return PAIRS.flatMap((p) => rowIdsOf(p.key));
}

/** Runs the scenario for the bridges whose rows are selected. */
export async function bridges(budget: Budget, selected: (id: string) => boolean, log: (line: string) => void): Promise<Row[]> {
  const rows: Row[] = [];
  for (const pair of PAIRS) {
    if (!rowIdsOf(pair.key).some(selected)) continue;
    log(`bridge ${pair.key}`);
    rows.push(...(await measurePair(pair, budget, log)).filter((r) => selected(r.id)));
  }
  return rows;
}

/** The CPU each side spent per call while `loop` ran: this process, and the serving process with its children. */
async function withCpu<R extends { calls: number }>(pid: number | undefined, loop: () => Promise<R>): Promise<R & { cpu: CpuPerTask }> {
  const pids = pid === undefined ? [] : processTree(pid);
  const own0 = ownCpuUs();
  const serving0 = pids.length === 0 ? null : childrenCpuUs(pids);
  const r = await loop();
  const own1 = ownCpuUs();
  const serving1 = pids.length === 0 ? null : childrenCpuUs(pids);
  const calls = Math.max(1, r.calls);
  const cpu: CpuPerTask = { requester_cpu_us: (own1 - own0) / calls };
  if (serving0 !== null && serving1 !== null) cpu.agent_cpu_us = (serving1 - serving0) / calls;
  return { ...r, cpu };
}

async function measurePair(pair: Pair, budget: Budget, log: (line: string) => void): Promise<Row[]> {
  // Every repetition's calls within one bridge session's room (see SESSION_CALLS).
  const perRep = Math.floor((SESSION_CALLS - Math.min(budget.warmupCalls, 200)) / budget.reps);
  const seqCalls = Math.max(1, Math.min(budget.sequentialCalls, Math.floor(perRep * 0.4)));
  const flyCalls = Math.max(DEPTH, Math.min(budget.inflightCalls, perRep - seqCalls));
  const method =
    `${pair.label}; one warm-up of up to ${Math.min(budget.warmupCalls, 200)} calls, then ${budget.reps} repetitions interleaved, ` +
    `each of up to ${seqCalls} sequential calls / ${flyCalls} calls with ${DEPTH} in flight (at most ${budget.repMs / 1000} s each); ` +
    `"agent CPU" is the serving side: ${pair.key === 'mcp' ? 'the bridge and the MCP server it started, or the MCP server alone' : 'the facade and the TAP agent it started, or the plain A2A server'}`;
  const seqBase = {
    id: `bridge.${pair.key}.sequential`,
    scenario: SCENARIO,
    title: `${pair.key === 'mcp' ? 'tap-bridge mcp' : 'tap-bridge a2a'}, sequential`,
    unit: 'calls/s',
    better: 'higher' as const,
    method,
  };
  const flyBase = { ...seqBase, id: `bridge.${pair.key}.inflight${DEPTH}`, title: `${seqBase.title.split(',')[0]}, ${DEPTH} in flight` };
  const live: BridgeSystem[] = [];
  const failed = new Map<string, string>();
  for (const [id, make] of [
    ['bridge', pair.bridge],
    ['direct', pair.direct],
  ] as const) {
    try {
      const s = await make();
      live.push(s);
      await warmUp(s.call, Math.min(budget.warmupCalls, 200), budget.warmupMs);
    } catch (err) {
      failed.set(id, oneLine(err));
      log(`  ${id}: ${oneLine(err)}`);
    }
  }
  const seq = new Map<string, { rate: number[]; p50: number[]; p99: number[]; cpu: CpuPerTask[] }>();
  const fly = new Map<string, { rate: number[]; cpu: CpuPerTask[] }>();
  try {
    for (let rep = 0; rep < budget.reps; rep++) {
      const order = rep % 2 === 0 ? live : [...live].reverse();
      for (const s of order) {
        if (failed.has(s.id)) continue;
        try {
          const r = await withCpu(s.pid, () => sequential(s.call, seqCalls, budget.repMs));
          const e = seq.get(s.id) ?? { rate: [], p50: [], p99: [], cpu: [] };
          e.rate.push(r.rate);
          e.p50.push(r.p50_us);
          e.p99.push(r.p99_us);
          e.cpu.push(r.cpu);
          seq.set(s.id, e);
        } catch (err) {
          failed.set(s.id, oneLine(err));
        }
      }
      for (const s of order) {
        if (failed.has(s.id)) continue;
        try {
          const r = await withCpu(s.pid, () => inflight(s.call, flyCalls, DEPTH, budget.repMs));
          const e = fly.get(s.id) ?? { rate: [], cpu: [] };
          e.rate.push(r.rate);
          e.cpu.push(r.cpu);
          fly.set(s.id, e);
        } catch (err) {
          failed.set(s.id, oneLine(err));
        }
      }
      log(
        `  repetition ${rep + 1}/${budget.reps}: ${live.map((s) => `${s.id} ${Math.round(seq.get(s.id)?.rate.at(-1) ?? NaN)}/${Math.round(fly.get(s.id)?.rate.at(-1) ?? NaN)}`).join(', ')}`,
      );
    }
  } finally {
    for (const s of live) await s.close().catch(() => {});
  }
  const names = {
    bridge: live.find((s) => s.id === 'bridge')?.name ?? 'the bridge',
    direct: live.find((s) => s.id === 'direct')?.name ?? 'without the bridge',
  };
  const seqFigure = (id: string): Figure | null => {
    const e = seq.get(id);
    if (!e || failed.has(id)) return null;
    return {
      name: names[id as 'bridge'],
      value: spread(e.rate),
      extra: { p50_us: spread(e.p50), p99_us: spread(e.p99), ...cpuExtra(e.cpu) },
    };
  };
  const flyFigure = (id: string): Figure | null => {
    const e = fly.get(id);
    if (!e || failed.has(id)) return null;
    return { name: names[id as 'bridge'], value: spread(e.rate), extra: cpuExtra(e.cpu) };
  };
  const build = (base: typeof seqBase, figureOf: (id: string) => Figure | null): Row => {
    const tap = figureOf('bridge');
    if (!tap) return notRun(base, `the bridge failed: ${failed.get('bridge') ?? 'no figure'}`);
    const direct = figureOf('direct');
    const baseline = direct ? compare(tap, 'direct', direct) : missingBaseline('direct', names.direct, failed.get('direct') ?? 'no figure');
    const measured =
      direct && baseline.ratio !== null
        ? `the bridge at ${baseline.ratio.toFixed(2)}× the direct call's rate (${ratioRange(tap.value, direct.value)})`
        : 'the direct call not measured';
    return {
      ...base,
      tap,
      baselines: [baseline],
      targets: [{ text: "The bridge's cost as a ratio of the direct call's rate", measured, met: null }],
    };
  };
  return [build(seqBase, seqFigure), build(flyBase, flyFigure)];
}

// ---- the MCP bridge ----

/** tap-bridge mcp in front of server-everything, over TAP stdio, and the reference client. */
async function mcpThroughBridge(): Promise<BridgeSystem> {
  const transport = spawnStdioTransport(process.execPath, [TAP_BRIDGE, 'mcp', '--', EVERYTHING], {
    cwd: ROOT,
    stderr: 'pipe',
    closeGraceMs: 3000,
    processGroup: true,
  });
  const client = await tapConnect(transport, DEPTH);
  if (!client.agent.capabilities.some((c) => c.name === 'mcp.echo')) {
    await client.close().catch(() => {});
    throw new Error(`the bridge offers no mcp.echo (capabilities: ${client.agent.capabilities.map((c) => c.name).join(', ')})`);
  }
  return {
    id: 'bridge',
    name: 'tap-bridge mcp -- mcp-server-everything, TAP stdio, reference client (mcp.echo)',
    pid: transport.child?.pid,
    async call(i) {
      const result = await client.submit('mcp.echo', { message: `${echoInput(i).text} ${i}` }).result;
      if (result.status !== 'completed') throw new Error(`mcp.echo ended ${result.status}: ${JSON.stringify(result.error)}`);
      return result;
    },
    async close() {
      // Ending the session ends the bridge's stdin: it closes the MCP server the MCP way and exits
      // (the transport kills what is left of its process group after the grace).
      await closeWithin('the TAP client', () => client.close());
    },
  };
}

/** server-everything called directly by the MCP SDK's client over stdio. */
async function mcpDirect(): Promise<BridgeSystem> {
  const transport = new StdioClientTransport({ command: EVERYTHING, args: [], cwd: ROOT, stderr: 'ignore' });
  const client = new McpClient({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    id: 'direct',
    name: 'mcp-server-everything, MCP SDK client over stdio (echo)',
    pid: transport.pid ?? undefined,
    async call(i) {
      const result = await client.callTool({ name: 'echo', arguments: { message: `${echoInput(i).text} ${i}` } });
      if (result.isError) throw new Error(`echo failed: ${JSON.stringify(result.content)}`);
      return result;
    },
    close: () => closeWithin('the MCP client', () => client.close()),
  };
}

// ---- the A2A facade ----

/** An A2A message whose DataPart names tap.test.echo and carries call i's input. */
function echoMessage(i: number): SendMessageRequest {
  const message: Message = {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: 1,
    parts: [
      {
        content: { $case: 'data', value: { capability: 'tap.test.echo', input: echoInput(i) } },
        metadata: undefined,
        filename: '',
        mediaType: 'application/json',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

const COMPLETED = 3;

/** An A2A system: @a2a-js/sdk's client of the server a child serves at the URL it prints. */
async function a2aSystem(id: string, name: string, child: LineChild, urlOf: (line: string) => string | undefined): Promise<BridgeSystem> {
  try {
    const line = await child.line((l) => urlOf(l) !== undefined, 30_000, `${name} listening`);
    const { ClientFactory } = await import('@a2a-js/sdk/client');
    const client = await new ClientFactory().createFromUrl(urlOf(line)!);
    return {
      id,
      name,
      pid: child.child.pid,
      async call(i) {
        const r = await client.sendMessage(echoMessage(i));
        const state = 'status' in r ? r.status?.state : undefined;
        if (state !== COMPLETED) throw new Error(`${name}: the task ended in state ${String(state)}, not completed`);
        return r;
      },
      close: () => child.stop(),
    };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** tap-bridge a2a in front of the reference agent (the bench's, limits raised) over stdio. */
function a2aFacade(): Promise<BridgeSystem> {
  const child = spawnScript(TAP_BRIDGE, [
    'a2a',
    '--port',
    '0',
    '--',
    process.execPath,
    ...nodeArgs(peer('tap-agent.ts'), ['--max-tasks', '100000']),
  ]);
  return a2aSystem(
    'bridge',
    'tap-bridge a2a -- the reference agent (tap.test.echo)',
    child,
    (l) => /served at (http:\/\/\S+?)\s/.exec(l)?.[1],
  );
}

/** A plain @a2a-js/sdk server whose AgentExecutor echoes. */
function a2aPlain(): Promise<BridgeSystem> {
  const child = spawnScript(peer('a2a-echo.ts'));
  return a2aSystem('direct', 'a plain @a2a-js/sdk server (express, an echoing AgentExecutor)', child, (l) =>
    l.startsWith('http://') ? l.trim() : undefined,
  );
}
