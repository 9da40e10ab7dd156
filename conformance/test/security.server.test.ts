/**
 * The security profile against agents of flesh: the reference agent process over wss:// with
 * mutual TLS, certified with two client certificates made at run time; and each broken agent
 * fails the case of the rule it breaks, by certificate or by a bearer token of an issuer made at
 * run time (spec: security#client-certificates, security#bearer-tokens). The reference agent with
 * tokens is certified by npm test's certification step (tools/certify-reference.ts, its
 * websocket-tokens and stdio-tokens runs), which holds it to every case of both profiles.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCertificates, type CertificateKit, type Issued } from '../../test/certificates.testkit.ts';
import { lacks, needing } from '../../test/system-tools.testkit.ts';
import { startNatsServer } from '../../reference/transports/nats/nats-server.testkit.ts';
import { runConformance } from '../run.ts';
import { AGENT, tapConform } from './bins.testkit.ts';
import { startCertificateBroken, startTokenBroken, type CertificateFault, type TokenFault } from './security-broken.testkit.ts';

const ISSUER = 'https://issuer.tap.test';
const AUDIENCE = 'tap.reference-agent';

let kit: CertificateKit;
let server: Issued;
let alice: Issued;
let bob: Issued;
let jwks: { keys: object[] };
let issuerKeyFile: string;
/** Starts the reference agent process with `args`, killed when the test ends; resolves with the URL it prints. */
async function referenceAgent(args: string[], onTestFinished: (fn: () => void) => void): Promise<string> {
  const child = spawn(process.execPath, [AGENT, '--grace-ms', '1000', ...args], {
    stdio: ['ignore', 'pipe', 'ignore'],
    env: { ...process.env, TAP_CONFORMANCE: '1' },
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return line;
}

const tlsArgs = () => ['--tls-cert', server.certFile, '--tls-key', server.keyFile, '--tls-ca', kit.ca.certFile];
const clientArgs = (...who: Issued[]) => [
  '--tls-ca',
  kit.ca.certFile,
  ...who.flatMap((c) => ['--tls-cert', c.certFile, '--tls-key', c.keyFile]),
];

// The tests run at once: each starts agents of its own, and the two certifications mostly wait on timed cases.
describe.skipIf(lacks('openssl'))(needing('openssl', 'tap-conform --profile security (spec: security)'), { concurrent: true }, () => {
  beforeAll(async () => {
    kit = makeCertificates();
    server = kit.ca.server();
    alice = kit.ca.client('alice', { san: 'URI:spiffe://tap.test/alice' });
    bob = kit.ca.client('bob', { san: 'URI:spiffe://tap.test/bob' });
    const pair = await generateKeyPair('ES256', { extractable: true });
    jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'issuer-1', alg: 'ES256' }] };
    issuerKeyFile = join(kit.dir, 'issuer.jwk');
    writeFileSync(issuerKeyFile, JSON.stringify({ ...(await exportJWK(pair.privateKey)), kid: 'issuer-1' }));
  });
  afterAll(() => kit?.remove());

  it('certifies the reference agent over wss:// with mutual TLS, given two client certificates', { timeout: 180_000 }, async ({
    onTestFinished,
  }) => {
    const url = await referenceAgent(['--listen', 'wss://127.0.0.1:0/tap', ...tlsArgs()], onTestFinished);
    expect(url).toMatch(/^wss:\/\//);
    const run = await tapConform([url, ...clientArgs(alice, bob), '--jobs', '4']);
    expect(run.report?.cases.filter((c) => ['FAIL', 'ERROR', 'NOT-TESTED'].includes(c.verdict)).map((c) => `${c.id}: ${c.detail}`)).toEqual(
      [],
    );
    expect(run.code).toBe(0);
    expect(run.report?.certified).toBe(true);
    const security = run.report!.cases.filter((c) => c.profile === 'security');
    expect(security.filter((c) => c.id.startsWith('security.tls.')).map((c) => c.verdict)).toEqual(['PASS', 'PASS', 'PASS']);
    expect(new Set(security.filter((c) => c.id.startsWith('security.token.')).map((c) => c.verdict))).toEqual(new Set(['UNIMPLEMENTED']));
  });

  it('leaves isolation between principals NOT-TESTED with one client certificate, and says what to give', { timeout: 60_000 }, async ({
    onTestFinished,
  }) => {
    const url = await referenceAgent(['--listen', 'wss://127.0.0.1:0/tap', ...tlsArgs()], onTestFinished);
    const report = await runConformance({
      target: url,
      only: ['authorization.isolation.*', 'security.tls.*'],
      tls: { ca: kit.ca.certFile, clients: [{ cert: alice.certFile, key: alice.keyFile }] },
    });
    const verdicts = Object.fromEntries(report.cases.map((c) => [c.id, c.verdict]));
    expect(verdicts).toMatchObject({
      'authorization.isolation.unknown-task': 'NOT-TESTED',
      'authorization.isolation.own-session': 'UNIMPLEMENTED',
      'security.tls.no-certificate': 'PASS',
      'security.tls.untrusted-certificate': 'PASS',
      'security.tls.principal': 'UNIMPLEMENTED',
    });
    expect(report.cases.find((c) => c.id === 'authorization.isolation.task-id')?.detail).toMatch(/pass a second --tls-cert and --tls-key/);
  });

  it.each<[CertificateFault, string, RegExp]>([
    ['no-certificate-asked', 'security.tls.no-certificate', /opened a session over a connection without a client certificate/],
    [
      'unverified-certificate',
      'security.tls.untrusted-certificate',
      /opened a session over a connection with a self-signed client certificate/,
    ],
    ['principal-per-connection', 'security.tls.principal', /another session of the same client certificate does not see the task/],
  ])('fails an agent that breaks the rule (%s) in %s', { timeout: 60_000 }, async (fault, id, why) => {
    const broken = await startCertificateBroken(fault, { cert: server.cert, key: server.key, ca: kit.ca.cert });
    try {
      const report = await runConformance({
        target: broken.url,
        only: [id],
        timeoutMs: 3000,
        tls: { ca: kit.ca.certFile, clients: [alice, bob].map((c) => ({ cert: c.certFile, key: c.keyFile })) },
      });
      expect(report.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([[id, 'FAIL', expect.stringMatching(why)]]);
    } finally {
      await broken.stop();
    }
  });

  it.each<[TokenFault, string, RegExp]>([
    ['token-optional', 'security.token.required', /without credentials: expected error AUTH_REQUIRED, got handshake\.ack/],
    ['expiry-unchecked', 'security.token.expired', /with an expired token: expected error AUTH_REQUIRED, got handshake\.ack/],
    ['foreign-accepted', 'security.token.foreign', /with a token of another issuer: expected error AUTH_REQUIRED, got handshake\.ack/],
    ['signature-unchecked', 'security.token.bad-signature', /signed by another key: expected error AUTH_REQUIRED, got handshake\.ack/],
    [
      'subject-ignored',
      'security.token.principal',
      /from a session of another token subject: expected error UNKNOWN_TASK, got task\.snapshot/,
    ],
    ['scopes-ignored', 'security.token.scopes', /under a token with no scopes: expected error PERMISSION_DENIED, got task\.accepted/],
  ])('fails an agent that breaks the rule (%s) in %s', { timeout: 60_000 }, async (fault, id, why) => {
    const broken = await startTokenBroken(fault, { issuer: ISSUER, audience: AUDIENCE, keys: jwks });
    try {
      const report = await runConformance({
        target: broken.url,
        only: [id],
        timeoutMs: 3000,
        jwt: { key: issuerKeyFile, issuer: ISSUER, audience: AUDIENCE },
      });
      expect(report.cases.map((c) => [c.id, c.verdict, c.detail])).toEqual([[id, 'FAIL', expect.stringMatching(why)]]);
    } finally {
      await broken.stop();
    }
  });

  describe.skipIf(lacks('nats-server'))(
    needing('nats-server', needing('openssl', 'tap-conform tls://host:port/<agent_id> through a server that requires client certificates')),
    () => {
      it('certifies the reference agent for the nats and tasks profiles, every client with its own certificate and permissions', {
        timeout: 120_000,
      }, async ({ onTestFinished }) => {
        const certs = makeCertificates();
        const agentId = 'tap.reference-agent';
        const agentCert = certs.ca.client(agentId);
        const harness = certs.ca.client('tap-conform');
        const tlsServer = certs.ca.server();
        // Each certificate is a user (verify_and_map), with the permissions of bindings-nats#security.
        const nats = await startNatsServer({
          jetstream: false,
          config: `tls { cert_file: "${tlsServer.certFile}", key_file: "${tlsServer.keyFile}", ca_file: "${certs.ca.certFile}", verify_and_map: true }
authorization { users = [
  { user: "CN=${agentId}", permissions: { publish: ["tap.out.*.${agentId}"], subscribe: ["tap.open.${agentId}", "tap.in.*.${agentId}"], allow_responses: true } }
  { user: "CN=tap-conform", permissions: { publish: ["tap.open.${agentId}", "tap.in.*.${agentId}"], subscribe: ["tap.out.*.${agentId}", "_INBOX.>"] } }
] }`,
        });
        try {
          const tlsUrl = nats.url.replace(/^nats:/, 'tls:');
          const url = await referenceAgent(
            ['--nats', tlsUrl, '--tls-ca', certs.ca.certFile, '--tls-cert', agentCert.certFile, '--tls-key', agentCert.keyFile],
            onTestFinished,
          );
          expect(url).toBe(`${tlsUrl}/${agentId}`);
          const report = await runConformance({
            target: url,
            profiles: ['nats', 'tasks'],
            timeoutMs: 5000,
            tls: { ca: certs.ca.certFile, clients: [{ cert: harness.certFile, key: harness.keyFile }] },
          });
          const bad = report.cases.filter((c) => c.verdict !== 'PASS' && c.verdict !== 'SKIPPED');
          expect(bad.map((c) => `${c.id}: ${c.verdict} ${c.detail}`)).toEqual([]);
          expect(report.cases.filter((c) => c.id.startsWith('nats.') && c.verdict === 'PASS').length).toBeGreaterThanOrEqual(10);
        } finally {
          await nats.stop();
          certs.remove();
        }
      });
    },
  );
});
