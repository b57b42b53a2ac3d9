// A service's own authorization server for the connected-accounts check
// (clients/oauth/connect.mjs): a second `oidc-provider` on loopback where the broker is
// the confidential client `broker-hosting` (client_secret_basic), with refresh tokens
// (`offline_access`, asked with `prompt=consent`) rotated on every use, short-lived
// opaque access tokens (ACCESS_TTL seconds) and RFC 7009 revocation. `GET /__counts`
// answers what it did: grants by type and revocations, so the check can see one
// refresh reach it and a disconnect revoke.
//
// Usage: CLIENT_SECRET=... REDIRECT=... ACCESS_TTL=30 node service_provider.mjs <port>
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const [port] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const counts = { authorization_code: 0, refresh_token: 0, revoked: 0, refused: 0 };

const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'broker-hosting',
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
    },
  ],
  claims: { openid: ['sub'], email: ['email'] },
  conformIdTokenClaims: false,
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'svc-1', alg: 'ES256', use: 'sig' }] },
  scopes: ['openid', 'offline_access', 'email', 'sites.read'],
  features: {
    devInteractions: { enabled: true },
    revocation: { enabled: true },
  },
  pkce: { required: () => true },
  rotateRefreshToken: true,
  ttl: {
    AccessToken: Number(process.env.ACCESS_TTL ?? 30),
    RefreshToken: 3600,
    Grant: 3600,
    Session: 3600,
    Interaction: 600,
    AuthorizationCode: 60,
    IdToken: 600,
  },
  findAccount: (ctx, sub) => ({
    accountId: sub,
    claims: () => ({ sub, email: `${sub}@hosting.example` }),
  }),
});
provider.proxy = false;
provider.on('grant.success', (ctx) => {
  const type = ctx.oidc.params?.grant_type;
  if (type in counts) counts[type] += 1;
});
provider.on('grant.error', () => {
  counts.refused += 1;
});
// A revocation (RFC 7009) ends the token's grant, and says so here.
provider.on('grant.revoked', () => {
  counts.revoked += 1;
});
provider.use(async (ctx, next) => {
  if (ctx.path === '/__counts') {
    ctx.body = counts;
    return;
  }
  await next();
});
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`service provider listening at ${issuer}`);
});
