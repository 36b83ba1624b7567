// node-oidc-provider configured like the Gatehouse run of bench.sh, for comparison: one
// client_credentials client, RS256-signed JWT access tokens (RFC 9068) for scope "api".
// Started by bench.sh with COMPARE=node-oidc-provider; not part of Gatehouse.
import * as crypto from 'node:crypto';
import Provider from 'oidc-provider';

const [port, clientSecret] = process.argv.slice(2);
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [{
    client_id: 'loadgen', client_secret: clientSecret, grant_types: ['client_credentials'],
    response_types: [], redirect_uris: [], token_endpoint_auth_method: 'client_secret_post', scope: 'api',
  }],
  scopes: ['api'],
  ttl: { ClientCredentials: 3600 }, // as Gatehouse: access tokens live one hour
  jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'bench', alg: 'RS256', use: 'sig' }] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'urn:api',
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: 'api', audience: 'urn:api', accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
    },
  },
});
provider.listen(Number(port), '127.0.0.1');
