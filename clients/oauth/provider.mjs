// A real, certified OpenID provider (npm `oidc-provider`) on loopback for the OAuth check
// (clients/oauth.sh): dynamic client registration, PKCE, resource indicators (RFC 8707)
// with JWT access tokens for the broker's resource, the provider's own login and consent
// pages. Signing keys are made at start; `/jwks` publishes them.
//
// Usage: node provider.mjs <port> <resource>
import crypto from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

function signingKey(type, options, kid, alg) {
  const { privateKey } = crypto.generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

const provider = new Provider(issuer, {
  jwks: {
    keys: [
      signingKey('rsa', { modulusLength: 2048 }, 'rs-1', 'RS256'),
      signingKey('ec', { namedCurve: 'P-256' }, 'es-1', 'ES256'),
    ],
  },
  scopes: ['openid', 'offline_access', 'tools:read', 'tools:write'],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: 'tools:read tools:write',
          audience: resource,
          accessTokenTTL: 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
  pkce: { required: () => true },
  findAccount: (ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
});
provider.proxy = false;
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider listening at ${issuer}`);
});
