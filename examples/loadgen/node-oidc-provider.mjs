// node-oidc-provider configured as Gatehouse is, for `make bench` (bench.sh) to measure
// side by side; not part of Gatehouse. In memory. PKCE required, RS256 ID tokens (ES256 for
// the client rp-es256), refresh tokens issued to clients allowed the refresh_token grant
// and rotated on every use, client_credentials, introspection and revocation on, and
// RS256-signed JWT access tokens (RFC 9068) for the resource urn:api.
//
// Login is an interaction of its own pages here, not an API: the interaction route below
// signs the one bench account in and grants what was asked at once, so an authorization
// request the driver starts without a session ends with a code and leaves a session.
//
// Its errors are logged to stderr, so a failed bench says why.
//
// Usage: node node-oidc-provider.mjs PORT RP_SECRET SVC_SECRET REDIRECT_URI
import * as crypto from 'node:crypto';
import Provider from 'oidc-provider';

// MapAdapter keeps every model in memory without a bound. (oidc-provider's bundled memory
// adapter is an LRU of 1,000 entries: under load it forgets codes and refresh tokens before
// they are used, which is not what a provider may do.)
const store = new Map(); // "Model:id" → { payload, expiresAt }
const grants = new Map(); // grantId → Set of "Model:id"
const byUid = new Map(); // Session uid → key
class MapAdapter {
  constructor(name) { this.name = name; }

  key(id) { return `${this.name}:${id}`; }

  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    store.set(key, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
    if (payload.grantId) {
      if (!grants.has(payload.grantId)) grants.set(payload.grantId, new Set());
      grants.get(payload.grantId).add(key);
    }
    if (payload.uid && this.name === 'Session') byUid.set(payload.uid, id);
  }

  async find(id) {
    const entry = store.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt < Date.now()) {
      store.delete(this.key(id));
      return undefined;
    }
    return entry.payload;
  }

  async findByUid(uid) { const id = byUid.get(uid); return id ? this.find(id) : undefined; }

  async findByUserCode() { return undefined; }

  async consume(id) { const entry = store.get(this.key(id)); if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000); }

  async destroy(id) { store.delete(this.key(id)); }

  async revokeByGrantId(grantId) {
    for (const key of grants.get(grantId) ?? []) store.delete(key);
    grants.delete(grantId);
  }
}

const [port, rpSecret, svcSecret, redirectURI] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;
const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const accountId = 'bench-user';
const codeClient = (id, alg) => ({
  client_id: id, client_secret: rpSecret, grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'], redirect_uris: [redirectURI], token_endpoint_auth_method: 'client_secret_post',
  scope: 'openid profile email offline_access api', id_token_signed_response_alg: alg,
});
const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [
    codeClient('rp', 'RS256'),
    codeClient('rp-es256', 'ES256'),
    {
      client_id: 'svc', client_secret: svcSecret, grant_types: ['client_credentials'], response_types: [],
      redirect_uris: [], token_endpoint_auth_method: 'client_secret_post', scope: 'api',
    },
  ],
  scopes: ['openid', 'offline_access', 'api'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  findAccount: (_ctx, sub) => ({
    accountId: sub,
    claims: () => ({ sub, email: 'bench@example.com', email_verified: true, name: 'Bench' }),
  }),
  pkce: { required: () => true },
  // Gatehouse issues a refresh token with every code exchange of a client allowed the grant.
  issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  rotateRefreshToken: true,
  // Gatehouse's lifetimes.
  ttl: {
    AccessToken: 3600, ClientCredentials: 3600, AuthorizationCode: 600, IdToken: 3600,
    RefreshToken: 30 * 24 * 3600, Session: 7 * 24 * 3600, Grant: 30 * 24 * 3600, Interaction: 1800,
  },
  cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
  jwks: {
    keys: [
      { ...rsa.export({ format: 'jwk' }), kid: 'rs', alg: 'RS256', use: 'sig' },
      { ...ec.export({ format: 'jwk' }), kid: 'es', alg: 'ES256', use: 'sig' },
    ],
  },
  renderError: (ctx, out, error) => {
    console.error('error page:', out, error?.error_detail ?? '');
    ctx.type = 'json';
    ctx.body = out;
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'urn:api',
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'api', audience: 'urn:api', accessTokenTTL: 3600,
        accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});

provider.use(async (ctx, next) => {
  if (!ctx.path.startsWith('/interaction/')) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  grant.addResourceScope('urn:api', 'api');
  const grantId = await grant.save();
  await provider.interactionFinished(ctx.req, ctx.res,
    { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
  return undefined;
});
provider.on('grant.error', (_ctx, err) => console.error('grant.error:', err.error_detail ?? err.message));
provider.listen(Number(port), '127.0.0.1');
