// A real MCP server guarded by a real authorization server, for toolgate's tests of its OAuth
// client (`toolgate login` and the tokens it keeps): the MCP TypeScript SDK v1 (pinned in
// tests/deps/npm/package.json) with its own bearer-auth middleware (`requireBearerAuth`) and
// protected resource metadata (`mcpAuthMetadataRouter`), in front of stateless streamable HTTP.
//
// Run: node guarded-server.mjs ISSUER [NPM_DIR]   (Node >= 22; ISSUER is provider.mjs's). It listens on a free port of 127.0.0.1 and
// prints one JSON line when ready: {"url":"http://127.0.0.1:PORT/mcp"}. It runs until stdin
// closes or SIGTERM. crates/toolgate-testkit/src/oidc.rs drives it (`GuardedServer`).
//
// What it serves:
// - /mcp: a request without a token, or with one the authorization server does not say is
//   active for this resource, answers 401 with a challenge naming the resource metadata and
//   scope mcp:tools; a token without mcp:tools answers 403 insufficient_scope, and so does a
//   call of the tool `admin` with a token without mcp:admin (the scope a client steps up to);
// - /.well-known/oauth-protected-resource/mcp: the resource metadata (RFC 9728), naming ISSUER;
// - tools `whoami` (the token's sub and client_id, a digest of the token, and how many
//   distinct tokens this server has been shown, so that a test sees a refresh), `echo`, and
//   `admin` (the token's scopes).
//
// Tokens are checked at every request: an opaque one by RFC 7662 introspection at
// ISSUER/token/introspection, as the static client toolgate/toolgate-secret, so that a revoked
// one is refused at once (provider.mjs with TOOLGATE_OIDC_OPAQUE=1 issues only opaque ones); a
// JWT (which oidc-provider does not introspect) by its signature, from ISSUER's JWKS, its iss,
// aud (this server) and exp.
//
// TEST-ONLY route: GET /test/tokens answers {tokens: [...]}, every access token this server
// has accepted, so that a test can look for them where they must not be.

import { createRequire } from 'node:module';
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const issuer = process.argv[2];
if (!issuer) {
  process.stderr.write('usage: node guarded-server.mjs ISSUER [NPM_DIR]\n');
  process.exit(2);
}
const npmDir = process.argv[3] || process.env.TOOLGATE_TEST_NPM_DIR || path.join(here, '..', 'npm');
const requireFrom = createRequire(path.join(npmDir, 'package.json'));
const load = (name) => import(pathToFileURL(requireFrom.resolve(name)).href);
const { default: express } = await load('express');
const jose = await load('jose');
const { Server } = await load('@modelcontextprotocol/sdk/server/index.js');
const { StreamableHTTPServerTransport } = await load('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { CallToolRequestSchema, ListToolsRequestSchema } = await load('@modelcontextprotocol/sdk/types.js');
const { requireBearerAuth } = await load('@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js');
const { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } = await load(
  '@modelcontextprotocol/sdk/server/auth/router.js'
);
const { InvalidTokenError } = await load('@modelcontextprotocol/sdk/server/auth/errors.js');

const INTROSPECTION_CLIENT = { id: 'toolgate', secret: 'toolgate-secret' };
const SCOPE = 'mcp:tools';
const ADMIN_SCOPE = 'mcp:admin';

const metadataResponse = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
if (!metadataResponse.ok) throw new Error(`${issuer}: metadata ${metadataResponse.status}`);
const oauthMetadata = await metadataResponse.json();

// Every access token accepted, in order, without repeats.
const seen = [];
const digest = (token) => crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);

const app = express();
const server = await new Promise((resolve) => {
  const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
});
const mcpUrl = new URL(`http://127.0.0.1:${server.address().port}/mcp`);

const jwks = jose.createRemoteJWKSet(new URL(oauthMetadata.jwks_uri));

// A JWT access token, checked here.
async function verifyJwt(token) {
  let payload;
  try {
    ({ payload } = await jose.jwtVerify(token, jwks, { issuer, audience: mcpUrl.href, typ: 'at+jwt' }));
  } catch (error) {
    throw new InvalidTokenError(`The token is not valid: ${error.code || error.message}`);
  }
  return {
    token,
    clientId: payload.client_id,
    scopes: typeof payload.scope === 'string' ? payload.scope.split(' ') : [],
    expiresAt: payload.exp,
    resource: mcpUrl,
    extra: { sub: payload.sub },
  };
}

const verifier = {
  async verifyAccessToken(token) {
    if (token.split('.').length === 3) return verifyJwt(token);
    const basic = Buffer.from(`${INTROSPECTION_CLIENT.id}:${INTROSPECTION_CLIENT.secret}`).toString('base64');
    const response = await fetch(oauthMetadata.introspection_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: new URLSearchParams({ token }).toString(),
    });
    if (!response.ok) throw new Error(`introspection: ${response.status}`);
    const data = await response.json();
    if (!data.active) throw new InvalidTokenError('The token is not active');
    const audience = [data.aud ?? []].flat().find((aud) => URL.canParse(aud) && new URL(aud).origin === mcpUrl.origin);
    return {
      token,
      clientId: data.client_id,
      scopes: data.scope ? data.scope.split(' ') : [],
      expiresAt: data.exp,
      resource: audience ? new URL(audience) : undefined,
      extra: { sub: data.sub },
    };
  },
};

app.use(
  mcpAuthMetadataRouter({
    oauthMetadata,
    resourceServerUrl: mcpUrl,
    scopesSupported: [SCOPE],
    resourceName: 'toolgate test guarded server',
  })
);

app.get('/test/tokens', (req, res) => res.json({ tokens: seen }));

const bearer = (requiredScopes) =>
  requireBearerAuth({
    verifier,
    requiredScopes,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
    expectedResource: mcpUrl,
  });
const auth = bearer([SCOPE]);
// A call of `admin` needs mcp:admin as well: the token of a client that has only mcp:tools
// is answered 403 insufficient_scope, naming both.
const adminAuth = bearer([SCOPE, ADMIN_SCOPE]);
const guard = (req, res, next) => {
  const admin = req.body?.method === 'tools/call' && req.body?.params?.name === 'admin';
  return (admin ? adminAuth : auth)(req, res, next);
};

const TOOLS = [
  {
    name: 'whoami',
    description: 'Who the access token says the caller is.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'admin',
    description: 'Answers the scopes of the token; its calls need mcp:admin.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'echo',
    description: 'Answers its text.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];

function mcpServer() {
  const mcp = new Server({ name: 'guarded', version: '1.0.0' }, { capabilities: { tools: {} } });
  mcp.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  mcp.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args = {} } = request.params;
    if (name === 'echo') return { content: [{ type: 'text', text: String(args.text) }] };
    if (name === 'admin') {
      return { content: [{ type: 'text', text: `admin with ${extra.authInfo?.scopes?.join(' ')}` }] };
    }
    if (name === 'whoami') {
      const info = extra.authInfo;
      const who = {
        sub: info?.extra?.sub ?? null,
        client_id: info?.clientId ?? null,
        token: digest(info?.token ?? ''),
        tokens_seen: seen.length,
      };
      return { content: [{ type: 'text', text: JSON.stringify(who) }] };
    }
    return { content: [{ type: 'text', text: `no tool ${name}` }], isError: true };
  });
  return mcp;
}

app.all('/mcp', express.json(), guard, async (req, res) => {
  if (!seen.includes(req.auth.token)) seen.push(req.auth.token);
  const mcp = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    transport.close();
    mcp.close();
  });
  try {
    await mcp.connect(transport);
    await transport.handleRequest(req, res, req.body);
  } catch (error) {
    process.stderr.write(`guarded-server: ${error?.stack || error}\n`);
    if (!res.headersSent) res.status(500).json({ error: String(error) });
  }
});

const stop = () => {
  server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();

process.stdout.write(`${JSON.stringify({ url: mcpUrl.href })}\n`);
