// A real, certified OpenID provider (npm `oidc-provider`) on loopback for the OAuth check
// (clients/oauth.sh): dynamic client registration, PKCE, resource indicators (RFC 8707)
// with JWT access tokens for the broker's resource, the provider's own login and consent
// pages. Signing keys are made at start; `/jwks` publishes them. With HUB_REDIRECT and
// HUB_SECRET set, the broker's hub is a registered confidential client
// (`tool-broker-hub`, client_secret_basic) whose ID tokens carry `preferred_username` and
// `roles` (`ROLES` below); its sign-in asks for no access token for the broker. With
// OBO_SECRET set, it also grants token exchange (RFC 8693) to the confidential client
// `tool-broker-obo`: a subject token it issued itself (a JWT access token, checked
// against its own keys) is exchanged for an opaque token naming the user and the
// audience asked; `GET /__exchanges` answers how many it granted.
//
// Usage: [HUB_REDIRECT=... HUB_SECRET=...] [OBO_SECRET=...] node provider.mjs <port> <resource>
import crypto from 'node:crypto';
import { createLocalJWKSet, jwtVerify } from 'jose';
import Provider, { errors } from 'oidc-provider';

const [port, resource] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const publicKeys = [];
function signingKey(type, options, kid, alg) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync(type, options);
  publicKeys.push({ ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const oboClients = process.env.OBO_SECRET
  ? [
      {
        client_id: 'tool-broker-obo',
        client_secret: process.env.OBO_SECRET,
        redirect_uris: [],
        grant_types: [EXCHANGE],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ]
  : [];

const hubClients = process.env.HUB_REDIRECT
  ? [
      {
        client_id: 'tool-broker-hub',
        client_secret: process.env.HUB_SECRET,
        redirect_uris: [process.env.HUB_REDIRECT],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ]
  : [];

// Who holds which role: carol approves writes, olive runs the console (and approves),
// audrey reads it; anyone else has none.
const ROLES = { carol: ['approver'], olive: ['admin', 'approver'], audrey: ['auditor'] };

const provider = new Provider(issuer, {
  clients: [...hubClients, ...oboClients],
  claims: { openid: ['sub'], profile: ['preferred_username', 'roles'] },
  // The profile claims in the ID token itself (the hub reads roles there).
  conformIdTokenClaims: false,
  jwks: {
    keys: [
      signingKey('rsa', { modulusLength: 2048 }, 'rs-1', 'RS256'),
      signingKey('ec', { namedCurve: 'P-256' }, 'es-1', 'ES256'),
    ],
  },
  scopes: ['openid', 'offline_access', 'profile', 'tools:read', 'tools:write'],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client) => (client?.clientId === 'tool-broker-hub' ? undefined : resource),
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
  findAccount: (ctx, sub) => ({
    accountId: sub,
    claims: () => ({ sub, preferred_username: sub, roles: ROLES[sub] ?? [] }),
  }),
});
provider.proxy = false;
provider.on('server_error', (ctx, err) => console.error('server_error', err));

let exchanges = 0;
if (process.env.OBO_SECRET) {
  const ownKeys = createLocalJWKSet({ keys: publicKeys });
  provider.registerGrantType(
    EXCHANGE,
    async (ctx) => {
      const { subject_token: subject, subject_token_type: type, audience } = ctx.oidc.params;
      if (type !== ACCESS_TOKEN || !audience) {
        throw new errors.InvalidRequest('an access token subject and an audience are needed');
      }
      let payload;
      try {
        ({ payload } = await jwtVerify(subject, ownKeys, { issuer }));
      } catch {
        throw new errors.InvalidGrant('the subject token is not one this provider issued, or it expired');
      }
      exchanges += 1;
      ctx.body = {
        access_token: `obo-${payload.sub}-${crypto.randomBytes(12).toString('hex')}`,
        issued_token_type: ACCESS_TOKEN,
        token_type: 'Bearer',
        expires_in: 300,
        scope: ctx.oidc.params.scope,
      };
    },
    ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'scope'],
  );
}
provider.use(async (ctx, next) => {
  if (ctx.path === '/__exchanges') {
    ctx.body = { exchanges };
    return;
  }
  await next();
});
provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`oidc-provider listening at ${issuer}`);
});
