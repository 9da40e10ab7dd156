/**
 * A transport that shows every frame to a recorder before passing it on, unchanged: how an agent
 * writes a trace record per message it sends or receives without any change to its runtime
 * (spec: mesh#trace-records).
 */
import { createWriteStream } from 'node:fs';
import type { Transport } from '../transports/index.ts';
import { FrameRecorder, jsonLines, type TraceSink } from './trace.ts';

const decoder = new TextDecoder();

/** Wraps `inner`: `record` sees each frame sent ('out') and received ('in') as text. */
export function recordingTransport(inner: Transport, record: (dir: 'in' | 'out', text: string) => void): Transport {
  const outer: Transport = {
    start: () => inner.start(),
    send: (text) => {
      record('out', text);
      return inner.send(text);
    },
    close: (info) => inner.close(info),
  };
  if (inner.setMaxFrameBytes) outer.setMaxFrameBytes = (n) => inner.setMaxFrameBytes!(n);
  if (inner.unsentBytes) outer.unsentBytes = () => inner.unsentBytes!();
  inner.onmessage = (frame) => {
    if (!frame.oversized && !frame.binary) record('in', decoder.decode(frame.bytes));
    outer.onmessage?.(frame);
  };
  inner.onclose = (info) => outer.onclose?.(info);
  inner.onerror = (err) => outer.onerror?.(err);
  return outer;
}

/**
 * A `wrap` for `agent.listenNats`: each session of agent `node` writes a trace record per message
 * it sends or receives to `sink` (spec: mesh#trace-records).
 */
export function recordSessions(node: string, sink: TraceSink): (transport: Transport) => Transport {
  return (transport) => {
    const recorder = new FrameRecorder(node, sink);
    return recordingTransport(transport, (dir, text) => recorder.frame(dir, text));
  };
}

/** A trace file being written: the `wrap` for `listenNats`, and `close`, which writes what is pending. */
export interface RecordingFile {
  wrap: (transport: Transport) => Transport;
  /**
   * Ends the file once every record given so far is written; call it after the agent stopped and
   * before the process exits, which would otherwise drop the records still in the stream's queue
   * (the task.result of a task that ended just before a signal).
   */
  close(): Promise<void>;
}

/**
 * `recordSessions` into a file of JSON lines, appended to: resolves once the file is open, rejects
 * when it cannot be; a later write failure goes to `onerror` (spec: mesh#trace-records).
 */
export async function recordSessionsToFile(node: string, file: string, onerror: (err: Error) => void): Promise<RecordingFile> {
  const out = createWriteStream(file, { flags: 'a' });
  await new Promise<void>((resolve, reject) => {
    out.once('open', () => resolve());
    out.once('error', reject);
  });
  out.on('error', onerror);
  const sink = jsonLines(out);
  return {
    // A record given after the file closed (a frame of a session still ending) is not written.
    wrap: recordSessions(node, (record) => {
      if (!out.writableEnded) sink(record);
    }),
    close: () =>
      new Promise<void>((resolve) => {
        if (out.closed) return resolve();
        // After an error too the stream closes; a second call while it ends waits for the same close.
        out.once('close', () => resolve());
        if (!out.writableEnded) out.end();
      }),
  };
}
