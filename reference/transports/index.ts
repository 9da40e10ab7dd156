/** The TAP transports: the Transport contract, an in-memory pair, stdio, WebSocket (with TLS) and NATS bindings. */
export type { CloseInfo, InboundFrame, RawSendOptions, RawSender, RawTransport, Transport } from './transport.ts';
export { HANDED_OVER, watchSend } from './transport.ts';
export { DEFAULT_MAX_FRAME_BYTES, checkMaxFrameBytes, frameOf } from './frame.ts';
export { LineReader, checkOneLine } from './lines.ts';
export { MemoryTransport, createMemoryPair } from './memory.ts';
export type { MemoryPairOptions } from './memory.ts';
export { StreamWriter, isPeerGone } from './writer.ts';
export {
  STDIO_EOF,
  STDIO_EPIPE,
  StdioAgentTransport,
  createStdioAgentTransport,
  spawnStdioTransport,
  ChildStdioTransport,
} from './stdio.ts';
export type { ChildExit, SpawnStdioOptions, StdioAgentOptions } from './stdio.ts';
export { describeExit } from './stdio-child.ts';
export {
  CloseCode,
  TAP_SUBPROTOCOL,
  WebSocketTransport,
  connectWebSocket,
  createWebSocketServer,
} from './websocket.ts';
export type { ConnectWebSocketOptions, TapWebSocketServer, WebSocketServerOptions } from './websocket.ts';
export { certificatePrincipal, readTlsFiles } from './tls.ts';
export type { Pem, TlsFiles, TlsOptions } from './tls.ts';
export {
  NatsCloseCode,
  NatsTransport,
  connectNatsTransport,
  createNatsListener,
  parseNatsUrl,
} from './nats/index.ts';
export type { ConnectNatsOptions, NatsListenerOptions, TapNatsListener } from './nats/index.ts';
