import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selfSignedClientCertificate } from '../x509.ts';

describe('the self-signed client certificate of the security cases', () => {
  it('is DER that OpenSSL parses, every time: 300 certificates, each with its names and a positive minimal serial', () => {
    for (let i = 0; i < 300; i++) {
      const { cert } = selfSignedClientCertificate({ cn: 'tap-test', uri: ['spiffe://tap/test'], dns: ['agent.test'] });
      const parsed = new X509Certificate(cert);
      expect(parsed.subject).toBe('CN=tap-test');
      expect(parsed.subjectAltName).toContain('URI:spiffe://tap/test');
      expect(parsed.serialNumber).toMatch(/^[4-7][0-9A-F]{15}$/);
    }
  });
});
