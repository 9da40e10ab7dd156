/**
 * The bare floor over WebSocket: a ws server on 127.0.0.1 that answers each text frame (see
 * bare-protocol.ts), configured like the TAP endpoint (no compression, subprotocol tap.v1 accepted,
 * no UTF-8 check in ws). Prints its URL on stdout.
 */
import { WebSocketServer } from 'ws';
import { answer } from './bare-protocol.ts';

const wss = new WebSocketServer({
  host: '127.0.0.1',
  port: 0,
  perMessageDeflate: false,
  skipUTF8Validation: true,
  clientTracking: false,
  handleProtocols: (protocols) => (protocols.has('tap.v1') ? 'tap.v1' : false),
});
wss.on('connection', (ws) => {
  const send = (text: string): void | Promise<void> => {
    ws.send(text);
    // Backpressure: let the socket drain before queueing more than 1 MiB.
    if (ws.bufferedAmount > 1 << 20) return new Promise<void>((resolve) => setTimeout(resolve, 1));
  };
  ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    void answer(data.toString(), send);
  });
  ws.on('error', () => {});
});
wss.on('listening', () => {
  const address = wss.address() as { port: number };
  process.stdout.write(`ws://127.0.0.1:${address.port}/\n`);
});
process.on('SIGTERM', () => process.exit(0));
