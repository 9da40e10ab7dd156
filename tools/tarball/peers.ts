/**
 * The tarball checks of the optional peers (reference/peers.ts): without them, every command and
 * call that needs one fails with one sentence naming the npm command and no stack trace, and the
 * entries that need none type-check with skipLibCheck off; with them, TypeScript types are
 * generated and type-check with the package's own, the README's files type-check, and a NATS round
 * trip runs from the installed package.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NO_NATS_SERVER, natsServerInstalled, startNatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { libraryEntries } from '../build.ts';
import { allBlocks, recipesOf } from './recipes.ts';
import { type Check, ok, run } from './run.ts';
import { typeWorldCheck } from './type-world.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const MANIFEST = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string };

/** The installed project these checks run in. */
export interface InstalledProject {
  dir: string;
  pkg: string;
  bin: string;
}

/** A one-line failure that names the install command of the missing peer, without a stack trace. */
function expectMissing(r: { code: number | null; stdout: string; stderr: string }, what: string, peer: string): string {
  const text = `${r.stderr}${r.stdout}`;
  if (r.code === 0) throw new Error(`${what} exited 0 without its optional peer`);
  if (!text.includes('npm install') || !text.includes(peer))
    throw new Error(`${what} does not name the install command of ${peer}: ${text.trim().slice(0, 300)}`);
  if (/^\s+at /m.test(text)) throw new Error(`${what} printed a stack trace: ${text.trim().slice(0, 300)}`);
  // The client is missing, not the server: nothing was tried (reference/peers.ts).
  if (/could not connect/.test(text)) throw new Error(`${what} blames the connection for a missing peer: ${text.trim().slice(0, 300)}`);
  return `exit ${r.code}: ${text.trim().split('\n')[0]!.slice(0, 160)}`;
}

/** The library's entries (tools/build.ts) whose declarations need an optional peer: NATS, and the bridges' SDKs. */
const PEER_ENTRIES = ['jetstream', 'mesh', 'bridges'];

/** The specifier a program imports an entry of libraryEntries() by ("index" is the main one). */
const specifier = (entry: string) => (entry === 'index' ? MANIFEST.name : `${MANIFEST.name}/${entry}`);

/** The files the README and Getting Started have users write (tools/tarball/recipes.ts runs them), each as a .ts file, with what it imports. */
function docFiles(): { name: string; code: string; imports: string[] }[] {
  return recipesOf(allBlocks())
    .flatMap((r) => r.steps.filter((s) => s.test?.file !== undefined))
    .map((f) => ({
      name: `${f.test!.recipe}-${f.test!.file!.replace(/\.m?js$/, '')}.ts`,
      code: f.code,
      imports: [...f.code.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!),
    }));
}

/** Compiles `files` (name → source) in `dir` of the project with strict tsc, skipLibCheck off: the package's declarations are checked too. */
async function typeCheck(
  project: string,
  dir: string,
  files: Record<string, string>,
  options: Record<string, unknown> = {},
): Promise<void> {
  mkdirSync(dir, { recursive: true });
  for (const [name, code] of Object.entries(files)) writeFileSync(join(dir, name), code);
  const compilerOptions = {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    types: ['node'],
    skipLibCheck: false,
    ...options,
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }, null, 2));
  const r = await run(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: dir, timeoutMs: 300_000 });
  if (r.code !== 0)
    throw new Error(`tsc (strict, skipLibCheck off) exited ${r.code}: ${r.stdout.trim().split('\n').slice(0, 6).join(' | ')}`);
}

/** Without the optional peers: each use that needs one says how to install it. */
export function missingPeerChecks(inst: InstalledProject): Check[] {
  const project = join(inst.dir, 'project');
  const bin = (name: string) => join(inst.bin, name);
  const nats = '@nats-io/transport-node';
  // Port 1 of the loopback: nothing listens there, and nothing is reached before the client is needed.
  const url = 'nats://127.0.0.1:1';
  const commands: [string, string, string[], string][] = [
    ['tap-reference-agent --nats', 'tap-reference-agent', ['--nats', url], nats],
    ['tap-reference-agent --listen … --mesh', 'tap-reference-agent', ['--listen', 'ws://127.0.0.1:0/tap', '--mesh', url], nats],
    ['tapctl nats status', 'tapctl', ['nats', 'status', '--server', url], nats],
    ['tapctl mesh agents', 'tapctl', ['mesh', 'agents', '--nats', url], nats],
    [
      'tapctl gen-types --lang ts',
      'tapctl',
      ['gen-types', '--lang', 'ts', '--out', join(project, 'no-types')],
      'json-schema-to-typescript',
    ],
    ['tap-conform nats://', 'tap-conform', [`${url}/tap.reference-agent`], nats],
    ['tap-bridge mcp', 'tap-bridge', ['mcp', '--', process.execPath, '-e', ''], '@modelcontextprotocol/sdk'],
  ];
  return [
    [
      "without the optional peers, a program importing every entry but those of NATS and the bridges, and the docs' files that import only such entries, type-check with skipLibCheck off",
      async () => {
        const entries = Object.keys(libraryEntries()).filter((e) => !PEER_ENTRIES.includes(e));
        const plain = new Set(entries.map(specifier));
        const files: Record<string, string> = {
          'entries.ts': entries.map((e, i) => `export type * as entry${i} from '${specifier(e)}';`).join('\n'),
        };
        const docs = docFiles().filter((f) => f.imports.every((i) => i.startsWith('node:') || plain.has(i)));
        for (const f of docs) files[f.name] = f.code;
        await typeCheck(project, join(project, 'no-peer-types'), files);
        return `${entries.length} entries and ${docs.map((f) => f.name).join(', ')}: tsc clean`;
      },
    ],
    [
      'without the optional peers, each NATS command, gen-types --lang ts and tap-bridge mcp names the npm install command and exits non-zero',
      async () => {
        const notes: string[] = [];
        for (const [what, cmd, args, peer] of commands)
          notes.push(`${what}: ${expectMissing(await run(bin(cmd), args, { cwd: project, timeoutMs: 60_000 }), what, peer)}`);
        return notes.join('; ');
      },
    ],
    [
      'without the optional peers, connectNats and connectMesh reject with the npm install command',
      async () => {
        const script = [
          `import { connectNats } from '${MANIFEST.name}/client';`,
          `import { connectMesh } from '${MANIFEST.name}/mesh';`,
          `for (const [what, call] of [['connectNats', () => connectNats('${url}/a.agent', { agentId: 'a.requester' })], ['connectMesh', () => connectMesh('${url}', { agentId: 'a.requester' })]]) {`,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the template is the consumer's, written to a file
          '  await call().then(() => { throw new Error(`${what} connected`); }, (err) => console.log(`${what}: ${err.message}`));',
          '}',
        ].join('\n');
        writeFileSync(join(project, 'missing-peers.mjs'), script);
        const r = ok(await run(process.execPath, ['missing-peers.mjs'], { cwd: project }), 'node missing-peers.mjs');
        for (const line of r.stdout.trim().split('\n'))
          if (!line.includes('npm install') || !line.includes(nats)) throw new Error(`no install command: ${line}`);
        return r.stdout.trim().split('\n').length + ' calls refused with the install command';
      },
    ],
  ];
}

/** With the optional peers: the TypeScript types and a NATS round trip. */
export function peerChecks(inst: InstalledProject): Check[] {
  const project = join(inst.dir, 'project');
  const bin = (name: string) => join(inst.bin, name);
  return [
    [
      "the installed types and those of tapctl gen-types --lang ts are one type world, both ways, and the docs' files type-check against the package",
      async () => {
        const dir = join(project, 'type-world');
        ok(await run(bin('tapctl'), ['gen-types', '--lang', 'ts', '--out', dir], { cwd: project }), 'tapctl gen-types --lang ts');
        const catalogue = JSON.parse(readFileSync(join(inst.pkg, 'schemas/v1/messages.json'), 'utf8')) as { messages: { type: string }[] };
        const name = MANIFEST.name;
        const imports = { main: name, core: `${name}/core`, client: `${name}/client`, generated: './tap-types.ts' };
        const world = typeWorldCheck(
          imports,
          catalogue.messages.map((m) => m.type),
        );
        // One program for both: the two-way check, and every file of the docs' recipes.
        const docs = docFiles();
        await typeCheck(
          project,
          dir,
          { 'world.ts': world, ...Object.fromEntries(docs.map((f) => [f.name, f.code])) },
          {
            allowImportingTsExtensions: true,
          },
        );
        return `${catalogue.messages.length} message types, both ways; ${docs.map((f) => f.name).join(', ')}; tsc clean`;
      },
    ],
    [
      'a NATS round trip from the installed package: tap-reference-agent --nats and connectNats',
      async () => {
        if (!natsServerInstalled) throw new Error(NO_NATS_SERVER);
        const server = await startNatsServer();
        const agent = spawn(bin('tap-reference-agent'), ['--nats', server.url], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] });
        try {
          const address = await new Promise<string>((resolve, reject) => {
            let out = '';
            agent.stdout.on('data', (d: Buffer) => {
              out += d.toString();
              const line = out.split('\n').find((l) => l.startsWith('nats://'));
              if (line) resolve(line.trim());
            });
            agent.on('exit', (code) => reject(new Error(`tap-reference-agent --nats exited ${code} before it listened`)));
          });
          const script = [
            `import { connectNats } from '${MANIFEST.name}/client';`,
            `const client = await connectNats(${JSON.stringify(address)}, { agentId: 'tarball.asker', requires: ['tap.test.echo'] });`,
            "const result = await client.submit('tap.test.echo', { over: 'nats' }).result;",
            'console.log(result.status, JSON.stringify(result.output));',
            'await client.close();',
          ].join('\n');
          writeFileSync(join(project, 'nats-round-trip.mjs'), script);
          const r = ok(
            await run(process.execPath, ['nats-round-trip.mjs'], { cwd: project, timeoutMs: 60_000 }),
            'node nats-round-trip.mjs',
          );
          if (r.stdout.trim() !== 'completed {"over":"nats"}') throw new Error(`the round trip printed "${r.stdout.trim()}"`);
          return `${address}: ${r.stdout.trim()}`;
        } finally {
          agent.kill('SIGTERM');
          await server.stop();
        }
      },
    ],
  ];
}
