/** The bare NDJSON floor over stdio: answers requests on stdin on stdout (see bare-protocol.ts). */
import { answer, type SendLine } from './bare-protocol.ts';

const send: SendLine = (text) => {
  if (process.stdout.write(text + '\n')) return;
  return new Promise<void>((resolve) => process.stdout.once('drain', resolve));
};

let buf = '';
let queue = Promise.resolve();
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  buf += chunk;
  let i;
  while ((i = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    // Echo requests answer at once; a stream request holds the queue until it has written everything.
    if (line.includes('"stream"')) queue = queue.then(() => answer(line, send));
    else void answer(line, send);
  }
});
process.stdin.on('end', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
