import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { alternativeNames, certificatePrincipal, readTlsFiles } from './tls.ts';

describe('the principal of a client certificate (spec: security#client-certificates)', () => {
  it("reads Node's subjectaltname, quoted values included", () => {
    expect(alternativeNames('DNS:a.test, IP Address:127.0.0.1, URI:spiffe://tap.test/a, email:x@tap.test')).toEqual([
      ['DNS', 'a.test'],
      ['IP Address', '127.0.0.1'],
      ['URI', 'spiffe://tap.test/a'],
      ['email', 'x@tap.test'],
    ]);
    expect(alternativeNames('DNS:"a,b.test", DNS:c.test')).toEqual([
      ['DNS', 'a,b.test'],
      ['DNS', 'c.test'],
    ]);
    expect(alternativeNames(undefined)).toEqual([]);
  });

  it('is the first URI name, else DNS name, else email, else the common name', () => {
    const subject = { CN: 'requester-a' } as never;
    expect(certificatePrincipal({ subject, subjectaltname: 'DNS:a.test, URI:spiffe://tap.test/a' })).toBe('x509:uri:spiffe://tap.test/a');
    expect(certificatePrincipal({ subject, subjectaltname: 'email:x@tap.test, DNS:a.test' })).toBe('x509:dns:a.test');
    expect(certificatePrincipal({ subject, subjectaltname: 'email:x@tap.test' })).toBe('x509:email:x@tap.test');
    expect(certificatePrincipal({ subject, subjectaltname: 'IP Address:127.0.0.1' })).toBe('x509:cn:requester-a');
    expect(certificatePrincipal({ subject: { CN: ['first', 'second'] } as never, subjectaltname: '' })).toBe('x509:cn:first');
    expect(certificatePrincipal({ subject: {} as never, subjectaltname: '' })).toBeUndefined();
    expect(certificatePrincipal(undefined)).toBeUndefined();
  });
});

describe('readTlsFiles', () => {
  it('reads PEM files and names the one it cannot use', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tap-tls-files-'));
    try {
      writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n');
      writeFileSync(join(dir, 'key.txt'), 'not pem');
      expect(readTlsFiles({ ca: join(dir, 'ca.pem') }).ca).toContain('BEGIN CERTIFICATE');
      expect(() => readTlsFiles({ key: join(dir, 'key.txt') })).toThrow(`the TLS key file ${join(dir, 'key.txt')} holds no PEM block`);
      expect(() => readTlsFiles({ cert: join(dir, 'missing.pem') })).toThrow(/cannot read the TLS cert file .*missing\.pem: ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
