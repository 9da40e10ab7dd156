/** A vscode-jsonrpc server over stdio with one request, `echo`, that returns its params. */
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node.js';

const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
connection.onRequest('echo', (params: unknown) => params);
connection.onClose(() => process.exit(0));
connection.listen();
process.on('SIGTERM', () => process.exit(0));
