// interop.mjs drives a running Gatehouse server with panva's openid-client (OpenID
// certified), as a relying party would, step by step. examples/server/interop_test.go builds
// and serves Gatehouse, registers the clients, signs a user in and runs:
//
//	node interop.mjs CONFIG.json
//
// CONFIG.json: {issuer, cookie, redirect_uri, post_logout_redirect_uri, clients: {name:
// {client_id, client_secret?, jwk?}}}; cookie is the user's "public-session=…" cookie, so
// the authorization endpoint answers with a code at once (every client is first-party).
//
// Each step prints exactly one JSON line {step, ok, skipped?, detail}. A step whose feature
// discovery does not advertise prints skipped: true with the reason. The script always
// exits 0 after printing its lines; the Go test judges them.
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import * as client from 'openid-client'

const HTTP_TIMEOUT_SECONDS = 10
const MAX_REDIRECTS = 5

const cfg = JSON.parse(await readFile(process.argv[2], 'utf8'))
const issuer = new URL(cfg.issuer)
const scope = 'openid profile email offline_access'

function emit(step, ok, detail, skipped = false) {
  const line = { step, ok, detail }
  if (skipped) line.skipped = true
  process.stdout.write(JSON.stringify(line) + '\n')
}

// Steps are recorded in order; one whose prerequisite failed reports that.
const results = new Map()

async function step(name, fn) {
  try {
    const detail = await fn()
    if (detail && detail.skip) {
      results.set(name, 'skipped')
      emit(name, true, detail.skip, true)
      return
    }
    results.set(name, 'ok')
    emit(name, true, detail ?? '')
  } catch (err) {
    results.set(name, 'failed')
    let detail = err?.message ?? String(err)
    if (err?.code) detail += ` (${err.code})`
    if (err?.error) detail += ` error=${err.error} ${err.error_description ?? ''}`
    if (err?.cause && typeof err.cause === 'object') {
      try {
        detail += ` cause=${JSON.stringify(err.cause).slice(0, 500)}`
      } catch {}
    }
    emit(name, false, detail)
  }
}

// skip is what a step returns when the server does not offer its feature.
const skip = (reason) => ({ skip: reason })

function need(prereq) {
  if (results.get(prereq) !== 'ok') throw new Error(`needs step ${prereq}, which did not pass`)
}

function assert(cond, message) {
  if (!cond) throw new Error(message)
}

// configFor is an openid-client Configuration for one registered client over the metadata
// discovery returned, allowed to speak plain HTTP to 127.0.0.1, and checking ID token
// signatures against the server's JWKS (openid-client trusts TLS alone by default).
function configFor(name, auth, metadata = {}) {
  const c = cfg.clients?.[name]
  if (!c) throw new Error(`discovery advertises the feature, but the test registered no client "${name}"`)
  const config = new client.Configuration(meta, c.client_id, { redirect_uris: [cfg.redirect_uri], ...metadata }, auth(c))
  client.allowInsecureRequests(config)
  client.enableNonRepudiationChecks(config)
  config.timeout = HTTP_TIMEOUT_SECONDS
  return config
}

// privateKey imports the client's private JWK (ES256) for signing assertions and request
// objects; kid tells the server which registered key signed.
async function privateKey(name) {
  const { jwk } = cfg.clients[name]
  const key = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
  return { key, kid: jwk.kid }
}

// authorize plays the signed-in browser: it requests url with the session cookie and
// follows the provider's own redirects, keeping the cookies they set as a browser would,
// until one leaves for the redirect URI, which it returns. A page instead (login, consent,
// error) is a failure.
async function authorize(url) {
  const jar = new Map(cfg.cookie.split(';').map((c) => c.trim().split('=')).map(([k, ...v]) => [k, v.join('=')]))
  let next = new URL(url)
  for (let i = 0; i < MAX_REDIRECTS; i++) {
    const resp = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      signal: AbortSignal.timeout(HTTP_TIMEOUT_SECONDS * 1000),
    })
    for (const set of resp.headers.getSetCookie()) {
      const [pair] = set.split(';')
      const at = pair.indexOf('=')
      if (at > 0) jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim())
    }
    const location = resp.headers.get('location')
    if (resp.status < 300 || resp.status > 399 || !location) {
      const body = (await resp.text()).slice(0, 300).replace(/\s+/g, ' ')
      throw new Error(`authorization at ${next.pathname} answered ${resp.status} without a redirect: ${body}`)
    }
    await resp.body?.cancel()
    next = new URL(location, next)
    if (next.href.startsWith(cfg.redirect_uri)) return next
    if (next.origin !== issuer.origin) throw new Error(`authorization redirected to ${next}, neither the provider nor the redirect URI`)
  }
  throw new Error(`authorization still redirecting after ${MAX_REDIRECTS} redirects`)
}

// codeFlow runs one authorization code flow with PKCE, state and nonce, all checked by
// openid-client. build turns the authorization parameters into the URL to visit (plain,
// JAR, PAR); grantOptions are passed to authorizationCodeGrant (DPoP).
async function codeFlow(config, { build, grantOptions } = {}) {
  const codeVerifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const params = {
    redirect_uri: cfg.redirect_uri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  }
  const url = build ? await build(params) : client.buildAuthorizationUrl(config, params)
  const callback = await authorize(url)
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
    undefined,
    grantOptions,
  )
  const claims = tokens.claims()
  assert(claims?.sub, 'the ID token has no sub')
  assert(tokens.access_token, 'no access_token')
  return { tokens, claims, url }
}

function describe(tokens, claims) {
  return `token_type=${tokens.token_type} sub=${claims.sub} refresh_token=${tokens.refresh_token ? 'yes' : 'no'}`
}

// wantBound checks that a DPoP-bound access token carries the key's thumbprint (RFC 9449
// §6): as cnf.jkt in the token when it is a JWT (Gatehouse's are), and in the
// introspection answer (§6.2) in any case.
async function wantBound(config, accessToken, jkt) {
  const parts = String(accessToken).split('.')
  if (parts.length === 3) {
    const { cnf } = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'))
    assert(cnf?.jkt === jkt, `access token cnf ${JSON.stringify(cnf)}, want jkt ${jkt}`)
  }
  const info = await client.tokenIntrospection(config, accessToken)
  assert(info.active === true && info.cnf?.jkt === jkt, `introspection answered ${JSON.stringify(info)}, want active with cnf.jkt ${jkt}`)
}

// jwkThumbprint is the RFC 7638 SHA-256 thumbprint of an EC public key.
async function jwkThumbprint(publicKey) {
  const jwk = await crypto.subtle.exportKey('jwk', publicKey)
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })
  return createHash('sha256').update(canonical).digest('base64url')
}

// methods is a list-valued metadata entry, empty when absent.
const methods = (metadata, key) => metadata[key] ?? []

// ---------------------------------------------------------------------------------------

// meta is the server's metadata, from the discovery step.
let meta
await step('discovery', async () => {
  const config = await client.discovery(issuer, cfg.clients.basic.client_id, undefined, undefined, {
    execute: [client.allowInsecureRequests],
    timeout: HTTP_TIMEOUT_SECONDS,
  })
  meta = config.serverMetadata()
  assert(meta.issuer === cfg.issuer, `issuer ${meta.issuer}, want ${cfg.issuer}`)
  for (const key of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri',
    'introspection_endpoint', 'revocation_endpoint', 'end_session_endpoint']) {
    assert(meta[key], `discovery has no ${key}`)
  }
  assert(methods(meta, 'code_challenge_methods_supported').includes('S256'), 'S256 PKCE not advertised')
  return `token_endpoint_auth_methods_supported=${methods(meta, 'token_endpoint_auth_methods_supported').join(',')}` +
    ` par=${Boolean(meta.pushed_authorization_request_endpoint)}` +
    ` request_parameter_supported=${Boolean(meta.request_parameter_supported)}` +
    ` dpop=${methods(meta, 'dpop_signing_alg_values_supported').join(',') || 'no'}`
})

// The baseline: client_secret_basic at the token endpoint, then refresh and userinfo.
let basic
await step('code_flow_client_secret_basic', async () => {
  need('discovery')
  const config = configFor('basic', (c) => client.ClientSecretBasic(c.client_secret))
  const { tokens, claims } = await codeFlow(config)
  assert(tokens.token_type.toLowerCase() === 'bearer', `token_type ${tokens.token_type}, want Bearer`)
  assert(tokens.refresh_token, 'no refresh_token for offline_access')
  basic = { config, tokens, claims }
  return describe(tokens, claims)
})

await step('refresh_client_secret_basic', async () => {
  need('code_flow_client_secret_basic')
  const refreshed = await client.refreshTokenGrant(basic.config, basic.tokens.refresh_token)
  assert(refreshed.access_token && refreshed.access_token !== basic.tokens.access_token, 'refresh gave no new access token')
  assert(refreshed.refresh_token && refreshed.refresh_token !== basic.tokens.refresh_token, 'refresh did not rotate the refresh token')
  const claims = refreshed.claims()
  if (claims) assert(claims.sub === basic.claims.sub, `refreshed ID token sub ${claims.sub}, want ${basic.claims.sub}`)
  basic.tokens = refreshed
  return `token_type=${refreshed.token_type} id_token=${claims ? 'yes' : 'no'}`
})

await step('userinfo_bearer', async () => {
  need('code_flow_client_secret_basic')
  const info = await client.fetchUserInfo(basic.config, basic.tokens.access_token, basic.claims.sub)
  assert(info.email, 'userinfo has no email')
  return `sub=${info.sub} email=${info.email}`
})

// client_secret_post at the token, introspection and revocation endpoints.
let post
await step('code_flow_client_secret_post', async () => {
  need('discovery')
  const config = configFor('post', (c) => client.ClientSecretPost(c.client_secret))
  const { tokens, claims } = await codeFlow(config)
  assert(tokens.refresh_token, 'no refresh_token for offline_access')
  post = { config, tokens, claims }
  return describe(tokens, claims)
})

await step('introspection_client_secret_post', async () => {
  need('code_flow_client_secret_post')
  const at = await client.tokenIntrospection(post.config, post.tokens.access_token)
  assert(at.active === true, `access token introspected as ${JSON.stringify(at)}, want active`)
  assert(at.client_id === post.config.clientMetadata().client_id, `access token client_id ${at.client_id}`)
  assert(at.sub === post.claims.sub, `access token sub ${at.sub}, want ${post.claims.sub}`)
  const rt = await client.tokenIntrospection(post.config, post.tokens.refresh_token, { token_type_hint: 'refresh_token' })
  assert(rt.active === true, `refresh token introspected as ${JSON.stringify(rt)}, want active`)
  const junk = await client.tokenIntrospection(post.config, 'not-a-token')
  assert(junk.active === false, `garbage introspected as ${JSON.stringify(junk)}, want inactive`)
  return `access token active (scope=${at.scope}), refresh token active, garbage inactive`
})

await step('revocation_client_secret_post', async () => {
  need('introspection_client_secret_post')
  await client.tokenRevocation(post.config, post.tokens.access_token, { token_type_hint: 'access_token' })
  const at = await client.tokenIntrospection(post.config, post.tokens.access_token)
  assert(at.active === false, `revoked access token introspected as ${JSON.stringify(at)}, want inactive`)
  await client.tokenRevocation(post.config, post.tokens.refresh_token, { token_type_hint: 'refresh_token' })
  const rt = await client.tokenIntrospection(post.config, post.tokens.refresh_token)
  assert(rt.active === false, `revoked refresh token introspected as ${JSON.stringify(rt)}, want inactive`)
  let refused = false
  try {
    await client.refreshTokenGrant(post.config, post.tokens.refresh_token)
  } catch (err) {
    refused = err?.error === 'invalid_grant'
    if (!refused) throw err
  }
  assert(refused, 'a revoked refresh token still refreshes')
  return 'access and refresh token revoked: both inactive, refresh refused with invalid_grant'
})

// Feature steps: each runs only when discovery advertises its feature.

await step('code_flow_private_key_jwt', async () => {
  need('discovery')
  if (!methods(meta, 'token_endpoint_auth_methods_supported').includes('private_key_jwt')) {
    return skip('token_endpoint_auth_methods_supported lacks private_key_jwt')
  }
  const key = await privateKey('private_key_jwt')
  const config = configFor('private_key_jwt', () => client.PrivateKeyJwt(key))
  const { tokens, claims } = await codeFlow(config)
  // The same assertion method at introspection and revocation.
  const at = await client.tokenIntrospection(config, tokens.access_token)
  assert(at.active === true, `introspection with private_key_jwt: ${JSON.stringify(at)}, want active`)
  await client.tokenRevocation(config, tokens.refresh_token)
  return describe(tokens, claims) + '; introspection and revocation with private_key_jwt'
})

await step('code_flow_client_secret_jwt', async () => {
  need('discovery')
  if (!methods(meta, 'token_endpoint_auth_methods_supported').includes('client_secret_jwt')) {
    return skip('token_endpoint_auth_methods_supported lacks client_secret_jwt')
  }
  const config = configFor('client_secret_jwt', (c) => client.ClientSecretJwt(c.client_secret))
  const { tokens, claims } = await codeFlow(config)
  const at = await client.tokenIntrospection(config, tokens.access_token)
  assert(at.active === true, `introspection with client_secret_jwt: ${JSON.stringify(at)}, want active`)
  await client.tokenRevocation(config, tokens.refresh_token)
  return describe(tokens, claims) + '; introspection and revocation with client_secret_jwt'
})

// get fetches url as the signed-in browser, without following redirects, and returns the
// status and the Location.
async function get(url) {
  const resp = await fetch(url, { redirect: 'manual', headers: { cookie: cfg.cookie }, signal: AbortSignal.timeout(HTTP_TIMEOUT_SECONDS * 1000) })
  await resp.body?.cancel()
  return { status: resp.status, location: resp.headers.get('location') ?? '' }
}

// pushedFlow runs a code flow whose parameters go to the PAR endpoint (RFC 9126), signed
// into a request object first (RFC 9101) when key is given, and checks what PAR promises:
// the front channel carries only client_id and request_uri, the request_uri is single-use,
// and the client, registered with --require-par, is refused a plain authorization request.
async function pushedFlow(config, key) {
  const { tokens, claims, url } = await codeFlow(config, {
    build: async (params) => {
      if (!key) return client.buildAuthorizationUrlWithPAR(config, params)
      const { searchParams } = await client.buildAuthorizationUrlWithJAR(config, params, key)
      return client.buildAuthorizationUrlWithPAR(config, searchParams)
    },
  })
  const requestURI = url.searchParams.get('request_uri')
  assert(requestURI?.startsWith('urn:ietf:params:oauth:request_uri:'), `request_uri ${requestURI}`)
  assert([...url.searchParams.keys()].sort().join(' ') === 'client_id request_uri',
    `the front-channel URL carries more than client_id and request_uri: ${url}`)
  const again = await get(url)
  assert(!again.location.includes('code='), 'a used request_uri gave a second code')
  const plain = await get(client.buildAuthorizationUrl(config, {
    redirect_uri: cfg.redirect_uri, scope, state: client.randomState(),
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
  }))
  assert(!plain.location.includes('code='), 'a client that requires PAR got a code without it')
  assert(plain.status >= 400 || new URL(plain.location, issuer).searchParams.get('error') === 'invalid_request',
    `authorization without PAR answered ${plain.status} ${plain.location}, want invalid_request`)
  return describe(tokens, claims) + '; request_uri single-use; plain request refused'
}

await step('code_flow_jar', async () => {
  need('discovery')
  if (meta.request_parameter_supported !== true) return skip('request_parameter_supported is not true')
  if (!methods(meta, 'token_endpoint_auth_methods_supported').includes('private_key_jwt')) {
    return skip('token_endpoint_auth_methods_supported lacks private_key_jwt (the client signs with its registered key)')
  }
  const key = await privateKey('private_key_jwt')
  const config = configFor('private_key_jwt', () => client.PrivateKeyJwt(key))
  const { tokens, claims, url } = await codeFlow(config, {
    build: (params) => client.buildAuthorizationUrlWithJAR(config, params, key),
  })
  assert(url.searchParams.has('request') && !url.searchParams.has('state'), `the URL carries its parameters outside the request object: ${url}`)
  return describe(tokens, claims) + '; parameters only in the signed request object'
})

await step('code_flow_par', async () => {
  need('discovery')
  if (!meta.pushed_authorization_request_endpoint) return skip('no pushed_authorization_request_endpoint in discovery')
  return pushedFlow(configFor('par', (c) => client.ClientSecretBasic(c.client_secret)))
})

await step('code_flow_par_jar', async () => {
  need('discovery')
  if (!meta.pushed_authorization_request_endpoint) return skip('no pushed_authorization_request_endpoint in discovery')
  if (meta.request_parameter_supported !== true) return skip('request_parameter_supported is not true')
  if (!methods(meta, 'token_endpoint_auth_methods_supported').includes('private_key_jwt')) {
    return skip('token_endpoint_auth_methods_supported lacks private_key_jwt (the client signs with its registered key)')
  }
  const key = await privateKey('par_jar')
  return pushedFlow(configFor('par_jar', () => client.PrivateKeyJwt(key)), key)
})

let dpop
await step('code_flow_dpop', async () => {
  need('discovery')
  const algs = methods(meta, 'dpop_signing_alg_values_supported')
  if (algs.length === 0) return skip('no dpop_signing_alg_values_supported in discovery')
  assert(algs.includes('ES256'), `dpop_signing_alg_values_supported ${algs}, want ES256 among them`)
  const config = configFor('dpop', (c) => client.ClientSecretBasic(c.client_secret))
  const keyPair = await client.randomDPoPKeyPair('ES256')
  const handle = client.getDPoPHandle(config, keyPair)
  const { tokens, claims } = await codeFlow(config, { grantOptions: { DPoP: handle } })
  assert(tokens.token_type.toLowerCase() === 'dpop', `token_type ${tokens.token_type}, want DPoP`)
  const jkt = await jwkThumbprint(keyPair.publicKey)
  await wantBound(config, tokens.access_token, jkt)
  dpop = { config, handle, tokens, claims, jkt }
  return describe(tokens, claims) + ` cnf.jkt=${jkt} (token and introspection)`
})

await step('refresh_dpop', async () => {
  if (results.get('code_flow_dpop') === 'skipped') return skip('DPoP not advertised')
  need('code_flow_dpop')
  const refreshed = await client.refreshTokenGrant(dpop.config, dpop.tokens.refresh_token, undefined, { DPoP: dpop.handle })
  assert(refreshed.token_type.toLowerCase() === 'dpop', `refreshed token_type ${refreshed.token_type}, want DPoP`)
  await wantBound(dpop.config, refreshed.access_token, dpop.jkt)
  dpop.tokens = refreshed
  return `token_type=${refreshed.token_type} cnf.jkt bound to the same key`
})

await step('userinfo_dpop', async () => {
  if (results.get('code_flow_dpop') === 'skipped') return skip('DPoP not advertised')
  need('code_flow_dpop')
  const info = await client.fetchUserInfo(dpop.config, dpop.tokens.access_token, dpop.claims.sub, { DPoP: dpop.handle })
  assert(info.sub === dpop.claims.sub, `userinfo sub ${info.sub}`)
  // The same DPoP-bound token presented as a Bearer token is refused.
  const resp = await fetch(meta.userinfo_endpoint, {
    headers: { authorization: `Bearer ${dpop.tokens.access_token}` },
    signal: AbortSignal.timeout(HTTP_TIMEOUT_SECONDS * 1000),
  })
  await resp.body?.cancel()
  assert(resp.status === 401, `userinfo with the DPoP-bound token as Bearer answered ${resp.status}, want 401`)
  return `sub=${info.sub} email=${info.email}; as Bearer: 401`
})

// Last: RP-initiated logout ends the session every flow above used.
await step('end_session', async () => {
  need('code_flow_client_secret_basic')
  const state = client.randomState()
  const idToken = basic.tokens.id_token
  assert(idToken, 'no ID token to hint with')
  const url = client.buildEndSessionUrl(basic.config, {
    id_token_hint: idToken,
    post_logout_redirect_uri: cfg.post_logout_redirect_uri,
    state,
  })
  const resp = await fetch(url, { redirect: 'manual', headers: { cookie: cfg.cookie }, signal: AbortSignal.timeout(HTTP_TIMEOUT_SECONDS * 1000) })
  await resp.body?.cancel()
  const location = new URL(resp.headers.get('location') ?? '', issuer)
  assert(resp.status >= 300 && resp.status < 400 && location.href.startsWith(cfg.post_logout_redirect_uri),
    `end session answered ${resp.status} ${location}, want a redirect to ${cfg.post_logout_redirect_uri}`)
  assert(location.searchParams.get('state') === state, `end session returned state ${location.searchParams.get('state')}`)
  // The session is over: authorization now wants a login.
  const after = await fetch(client.buildAuthorizationUrl(basic.config, {
    redirect_uri: cfg.redirect_uri, scope, state: client.randomState(), nonce: client.randomNonce(),
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()), code_challenge_method: 'S256',
  }), { redirect: 'manual', headers: { cookie: cfg.cookie }, signal: AbortSignal.timeout(HTTP_TIMEOUT_SECONDS * 1000) })
  await after.body?.cancel()
  assert(!(after.headers.get('location') ?? '').includes('code='), 'the ended session still gets codes')
  return `redirected to post_logout_redirect_uri with state; the session no longer gets codes`
})
