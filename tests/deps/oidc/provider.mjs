// A real OAuth 2.1 authorization server for toolgate's tests: oidc-provider (pinned in
// tests/deps/npm/package.json) on 127.0.0.1, configured as an MCP authorization server.
//
// Run: node provider.mjs [NPM_DIR]   (Node >= 22; NPM_DIR holds node_modules, default
// $TOOLGATE_TEST_NPM_DIR, else ../npm beside this file). It listens on a free port and prints
// one JSON line when ready: {"issuer":"http://127.0.0.1:PORT"}. It runs until stdin closes or
// SIGTERM. crates/toolgate-testkit/src/oidc.rs drives it.
//
// What it serves (everything else is oidc-provider's own, unchanged):
// - issuer http://127.0.0.1:PORT (no trailing slash), its metadata at
//   /.well-known/oauth-authorization-server (RFC 8414) and /.well-known/openid-configuration,
//   keys at /jwks;
// - dynamic client registration at /reg, open (no initial access token), with the resource scopes
//   below among the scopes a client may register for (the MCP SDKs register with the scope a
//   resource's challenge names);
// - resource indicators (RFC 8707): any `resource` is a resource server whose access tokens are
//   JWTs (typ at+jwt) with `aud` = the resource, scopes mcp:tools and mcp:admin, 10 minutes;
//   except that the tokens of the static client ci-opaque are opaque, with the same `aud`;
// - token introspection (RFC 7662) at /token/introspection, for the static clients (toolgate,
//   below, is the resource server's own), and revocation (RFC 7009) at /token/revocation;
// - grants: authorization_code (response_type code only, PKCE S256 required of every
//   client), refresh_token (issued with every code whose client may use it, no offline_access
//   needed; rotated at each use by a public client), client_credentials;
// - claims `groups` (array) and `tenant` (string) in access tokens: for client_credentials
//   from the table STATIC_CLIENTS below, for users from ACCOUNTS; registered clients have none.
//
// No human in the authorization code flow: /interaction/:uid (oidc-provider's default
// interaction URL) finishes every interaction at once. Login as the account named by
// `login_hint` (default alice), then consent to every scope and resource asked for. A client
// that follows the redirects with plain GETs, keeping the cookies the server sets, ends at its
// redirect_uri with a code.
//
// TEST-ONLY routes, which no real authorization server has:
// - POST /test/mint {claims, header, sign}: a JWT with exactly these claims (defaults: iss =
//   the issuer, iat = now, exp = now + 300; a claim given as null is left out) and header
//   fields over the defaults. sign: "provider" (the provider's current signing key, in its
//   JWKS), "stranger" (a fresh key of the same type, never in the JWKS; kid "stranger-..."
//   unless header.kid says otherwise), "none" (alg none, no signature). Answers {token, kid}.
// - POST /test/rotate {alg}: a new signing key (alg default ES256) added to the JWKS and used
//   from then on for access tokens and "provider" mints; the old key stays in the JWKS.
//   Answers {kid}.
// - POST /test/destroy {token}: forgets that one access or refresh token, and nothing else of
//   its grant (RFC 7009 revocation of an access token also revokes the grant's refresh tokens):
//   an access token so destroyed stands for one that expired early. Answers {kind} (null when
//   there was no such token).
//
// Options, by environment variable (the defaults are as above):
// - TOOLGATE_OIDC_OPAQUE=1: every access token is opaque, so that a resource server can check
//   any of them by introspection (oidc-provider introspects and revokes only opaque ones);
// - TOOLGATE_OIDC_ACCESS_TTL=SECONDS: the lifetime of access tokens (default 600).

import { createRequire } from 'node:module';
import * as http from 'node:http';
import * as path from 'node:path';
import * as crypto from 'node:crypto';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const npmDir = process.argv[2] || process.env.TOOLGATE_TEST_NPM_DIR || path.join(here, '..', 'npm');
const requireFrom = createRequire(path.join(npmDir, 'package.json'));
const load = (name) => import(pathToFileURL(requireFrom.resolve(name)).href);
const { default: Provider } = await load('oidc-provider');
const jose = await load('jose');
// oidc-provider keeps its keystore and published key set here; /test/rotate adds to both.
const { default: internals } = await import(
  pathToFileURL(path.join(path.dirname(requireFrom.resolve('oidc-provider')), 'helpers', 'weak_cache.js')).href
);

const SCOPES = 'mcp:tools mcp:admin';
const ACCESS_TOKEN_TTL = Number(process.env.TOOLGATE_OIDC_ACCESS_TTL || 600);
const ALL_OPAQUE = process.env.TOOLGATE_OIDC_OPAQUE === '1';

const ACCOUNTS = {
  alice: { groups: ['oncall'], tenant: 'acme' },
  bob: { groups: [], tenant: 'globex' },
};

const STATIC_CLIENTS = {
  'ci-acme': { secret: 'ci-acme-secret', groups: ['deploy'], tenant: 'acme' },
  'ci-globex': { secret: 'ci-globex-secret', groups: [], tenant: 'globex' },
  // Its access tokens are opaque: checked by introspection.
  'ci-opaque': { secret: 'ci-opaque-secret', groups: ['deploy'], tenant: 'acme', opaque: true },
  // The resource server's client, which introspects.
  toolgate: { secret: 'toolgate-secret', groups: [] },
};

// The signing keys, private, by kid; `current` signs access tokens and "provider" mints.
const keys = new Map();
let current;

async function newKey(alg, prefix) {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, alg, use: 'sig', kid: `${prefix}-${crypto.randomUUID()}` };
}

function publicJwk(jwk) {
  const { d, p, q, dp, dq, qi, ...pub } = jwk;
  return pub;
}

const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

function answer(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

let provider;
let issuer;

async function mint({ claims = {}, header = {}, sign = 'provider' }) {
  const now = Math.floor(Date.now() / 1000);
  const payload = { iss: issuer, iat: now, exp: now + 300, ...claims };
  for (const [name, value] of Object.entries(payload)) {
    if (value === null) delete payload[name];
  }
  if (sign === 'none') {
    return { token: `${b64({ alg: 'none', typ: 'at+jwt', ...header })}.${b64(payload)}.`, kid: null };
  }
  let jwk;
  if (sign === 'provider') {
    jwk = keys.get(current);
  } else if (sign === 'stranger') {
    jwk = await newKey(keys.get(current).alg, 'stranger');
  } else {
    throw new Error(`sign must be "provider", "stranger" or "none", not ${JSON.stringify(sign)}`);
  }
  const protectedHeader = { alg: jwk.alg, typ: 'at+jwt', kid: jwk.kid, ...header };
  const key = await jose.importJWK(jwk, jwk.alg);
  const token = await new jose.SignJWT(payload).setProtectedHeader(protectedHeader).sign(key);
  return { token, kid: protectedHeader.kid };
}

async function rotate({ alg = 'ES256' }) {
  const jwk = await newKey(alg, 'rotated');
  keys.set(jwk.kid, jwk);
  internals(provider).keystore.add(structuredClone(jwk));
  internals(provider).jwks.keys.push(publicJwk(jwk));
  current = jwk.kid;
  return { kid: jwk.kid };
}

async function destroy({ token }) {
  for (const model of [provider.AccessToken, provider.RefreshToken, provider.ClientCredentials]) {
    const found = await model.find(String(token), { ignoreExpiration: true });
    if (found) {
      await found.destroy();
      return { kind: found.kind };
    }
  }
  return { kind: null };
}

// Finishes the interaction `uid` without asking anyone: login first, then consent.
async function interact(req, res) {
  const { prompt, params, session } = await provider.interactionDetails(req, res);
  if (prompt.name === 'login') {
    const accountId = params.login_hint || 'alice';
    if (!ACCOUNTS[accountId]) {
      return answer(res, 400, { error: `no account ${JSON.stringify(accountId)}` });
    }
    return provider.interactionFinished(req, res, { login: { accountId } }, {
      mergeWithLastSubmission: false,
    });
  }
  if (prompt.name === 'consent') {
    const grant = new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missingResourceScopes || {})) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, {
      mergeWithLastSubmission: true,
    });
  }
  return answer(res, 400, { error: `unexpected prompt ${prompt.name}` });
}

async function route(req, res, next) {
  const { pathname } = new URL(req.url, issuer);
  try {
    if (pathname.startsWith('/interaction/') && req.method === 'GET') return await interact(req, res);
    if (pathname === '/test/mint' && req.method === 'POST') return answer(res, 200, await mint(await readJson(req)));
    if (pathname === '/test/rotate' && req.method === 'POST') return answer(res, 200, await rotate(await readJson(req)));
    if (pathname === '/test/destroy' && req.method === 'POST') return answer(res, 200, await destroy(await readJson(req)));
  } catch (error) {
    return answer(res, 500, { error: String(error?.stack || error) });
  }
  return next(req, res);
}

let handler;
const server = http.createServer((req, res) => route(req, res, handler));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
issuer = `http://127.0.0.1:${server.address().port}`;

const first = await newKey('RS256', 'provider');
keys.set(first.kid, first);
current = first.kid;

provider = new Provider(issuer, {
  jwks: { keys: [structuredClone(first)] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  clients: Object.entries(STATIC_CLIENTS).map(([clientId, { secret }]) => ({
    client_id: clientId,
    client_secret: secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  })),
  async findAccount(ctx, sub) {
    if (!ACCOUNTS[sub]) return undefined;
    return { accountId: sub, claims: async () => ({ sub }) };
  },
  async extraTokenClaims(ctx, token) {
    const who = token.accountId ? ACCOUNTS[token.accountId] : STATIC_CLIENTS[token.clientId];
    return who ? { groups: who.groups, tenant: who.tenant } : undefined;
  },
  // The resource scopes too, so that a client may register (RFC 7591 `scope`) with the scope a
  // resource's challenge names, as the MCP SDKs do.
  scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],
  responseTypes: ['code'],
  pkce: { required: () => true },
  async issueRefreshToken(ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  ttl: {
    AccessToken: ACCESS_TOKEN_TTL,
    ClientCredentials: ACCESS_TOKEN_TTL,
    AuthorizationCode: 60,
    Grant: 3600,
    Interaction: 600,
    Session: 3600,
    IdToken: 600,
    RefreshToken: 3600,
  },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource, client) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: ACCESS_TOKEN_TTL,
        accessTokenFormat: ALL_OPAQUE || STATIC_CLIENTS[client?.clientId]?.opaque ? 'opaque' : 'jwt',
        jwt: { sign: { alg: keys.get(current).alg, kid: current } },
      }),
    },
  },
});

handler = provider.callback();

const stop = () => {
  server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
