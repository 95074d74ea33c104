// An MCP client on the TypeScript SDK v1 (@modelcontextprotocol/sdk) that authenticates with the
// SDK's own OAuth support, for toolgate's tests (crates/toolgate/tests/it/sdk_oauth.rs).
//
// Connects to one streamable HTTP endpoint, lists the tools, calls one, and prints ONE JSON
// document on stdout. Run it with Node 22 ($TOOLGATE_TEST_NODE22); the SDK is loaded from
// $TOOLGATE_TEST_NPM_DIR/node_modules (default: ../deps/npm next to this file).
//
// Usage:
//   node ts_oauth_client.mjs --flow code [--expired-token JWT] URL
//   node ts_oauth_client.mjs --flow client-credentials --client-id ID --client-secret SECRET --issuer ISS
//                            --scope SCOPE URL
//   node ts_oauth_client.mjs --flow key --key KEY URL
// Options: --tool NAME (default fx__echo), --text TEXT (its "text" argument, default "hi"),
// --timeout SECS (default 60).
//
// Flows:
//   code                 an OAuthClientProvider of this file (in memory) on
//                        StreamableHTTPClientTransport's `authProvider`: the SDK gets a 401,
//                        reads the protected resource metadata it names, the authorization
//                        server's metadata, registers a client (DCR) and sends the "browser" to
//                        the authorization URL (PKCE, `resource`); redirectToAuthorization follows
//                        it with plain GETs (keeping cookies) up to the redirect URI, the connect
//                        fails with UnauthorizedError, and transport.finishAuth(code) gets the
//                        tokens; a new transport on the same provider connects. Then the access
//                        token is swapped for --expired-token (an expired one for the same
//                        audience; without it, a token that is no JWT at all): the server's 401
//                        makes the SDK refresh with the refresh token and send again.
//   client-credentials   the SDK's ClientCredentialsProvider (client/auth-extensions.js):
//                        discovery from the 401, then the client_credentials grant for --scope
//                        (this SDK sends the provider's configured scope in that grant, not the
//                        challenge's).
//   key                  an API key as `Authorization: Bearer KEY`, no OAuth.
//
// Output: {client, sdkVersion, flow, connected, protocolVersion, tools: [names], result,
// authorization?: {resource, scope, code_challenge_method}, refreshed?: {result, tokenChanged,
// tokensSaved}, requests: [{method, url, status, grantType?, resource?}], error?}.
// `authorization` is what the authorization URL asked for; `requests` is every HTTP request the
// SDK sent, in order, with the grant and `resource` of token requests. Exit status 0 when the
// tool was called, 1 otherwise.

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.TOOLGATE_TEST_NPM_DIR || path.resolve(HERE, '../deps/npm');
const requireSdk = createRequire(path.join(NPM_DIR, 'package.json'));

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const MAX_REDIRECTS = 10;

function usageError(msg) {
  process.stderr.write(`ts_oauth_client.mjs: ${msg}\n`);
  process.exit(2);
}

function parseArgv(argv) {
  const opts = { tool: 'fx__echo', text: 'hi', timeout: 60 };
  const names = {
    '--flow': 'flow',
    '--client-id': 'clientId',
    '--client-secret': 'clientSecret',
    '--issuer': 'issuer',
    '--scope': 'scope',
    '--key': 'key',
    '--expired-token': 'expiredToken',
    '--tool': 'tool',
    '--text': 'text',
    '--timeout': 'timeout',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a in names) {
      if (i + 1 >= argv.length) usageError(`${a} needs a value`);
      opts[names[a]] = argv[++i];
    } else if (a.startsWith('-')) usageError(`unknown option ${a}`);
    else if (opts.url) usageError('one URL only');
    else opts.url = a;
  }
  opts.timeout = Number(opts.timeout);
  if (!opts.url) usageError('missing URL');
  const needed = { code: [], 'client-credentials': ['clientId', 'clientSecret', 'issuer', 'scope'], key: ['key'] };
  if (!(opts.flow in needed)) usageError('--flow must be code, client-credentials or key');
  for (const name of needed[opts.flow]) {
    if (!(name in opts)) usageError(`--flow ${opts.flow} needs --${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  }
  return opts;
}

// Follows `url` with plain GETs, keeping cookies, until the redirect URI; that URL.
async function browse(url) {
  const cookies = new Map();
  for (let i = 0; i < MAX_REDIRECTS; i++) {
    if (url.startsWith(REDIRECT_URI)) return new URL(url);
    const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    for (const set of response.headers.getSetCookie()) {
      const [pair] = set.split(';');
      const at = pair.indexOf('=');
      const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1)];
      if (value) cookies.set(name, value);
      else cookies.delete(name);
    }
    const location = response.headers.get('location');
    if (!location) throw new Error(`GET ${url}: ${response.status} without a redirect: ${await response.text()}`);
    url = new URL(location, url).href;
  }
  throw new Error(`more than ${MAX_REDIRECTS} redirects`);
}

// The SDK's OAuthClientProvider for the authorization code flow, in memory.
class MemoryProvider {
  constructor() {
    this.saved = 0;
    this.landed = undefined;
  }
  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata() {
    return {
      client_name: 'toolgate-ts-oauth-client',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this._state = randomBytes(16).toString('hex');
    return this._state;
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
    this.saved += 1;
  }
  async redirectToAuthorization(url) {
    this.asked = Object.fromEntries(
      ['resource', 'scope', 'code_challenge_method'].filter((k) => url.searchParams.has(k)).map((k) => [k, url.searchParams.get(k)]),
    );
    this.landed = await browse(url.href);
  }
  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }
  codeVerifier() {
    return this._verifier;
  }
  // The code the redirect URI received, after checking the state.
  code() {
    const query = this.landed?.searchParams;
    if (!query) throw new Error('the authorization URL was never followed to the redirect URI');
    if (query.get('error')) throw new Error(`the authorization server refused: ${this.landed}`);
    if (query.get('state') !== this._state) throw new Error(`state mismatch: ${this.landed}`);
    return query.get('code');
  }
}

async function main() {
  const opts = parseArgv(process.argv.slice(2));
  const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const { UnauthorizedError } = requireSdk('@modelcontextprotocol/sdk/client/auth.js');
  const { ClientCredentialsProvider } = requireSdk('@modelcontextprotocol/sdk/client/auth-extensions.js');
  const sdkVersion = JSON.parse(
    readFileSync(path.join(NPM_DIR, 'node_modules/@modelcontextprotocol/sdk/package.json'), 'utf8'),
  ).version;

  const requests = [];
  const out = { client: 'typescript-sdk', sdkVersion, flow: opts.flow, connected: false, requests };
  // Every request the SDK sends, the OAuth ones included (the transport hands its fetch to auth()).
  const loggingFetch = async (input, init) => {
    const response = await fetch(input, init);
    const entry = { method: init?.method ?? 'GET', url: String(input instanceof Request ? input.url : input), status: response.status };
    const body = init?.body;
    const form = body instanceof URLSearchParams ? body : typeof body === 'string' ? new URLSearchParams(body) : undefined;
    if (form?.has('grant_type')) {
      entry.grantType = form.get('grant_type');
      entry.resource = form.get('resource');
    }
    requests.push(entry);
    return response;
  };

  let provider;
  const headers = {};
  if (opts.flow === 'code') provider = new MemoryProvider();
  else if (opts.flow === 'client-credentials') {
    provider = new ClientCredentialsProvider({
      clientId: opts.clientId,
      clientSecret: opts.clientSecret,
      expectedIssuer: opts.issuer,
      // This SDK asks the client_credentials grant for the scope configured here only (not the
      // one the server's challenge names, as for the authorization code flow).
      scope: opts.scope,
    });
  } else headers.Authorization = `Bearer ${opts.key}`;

  const timeout = Math.round(opts.timeout * 1000);
  const url = new URL(opts.url);
  const connect = async () => {
    const transport = new StreamableHTTPClientTransport(url, {
      authProvider: provider,
      fetch: loggingFetch,
      requestInit: { headers },
    });
    const client = new Client({ name: 'toolgate-ts-oauth-client', version: '0.1.0' }, { capabilities: {} });
    await client.connect(transport, { timeout });
    return [client, transport];
  };

  let client;
  let transport;
  try {
    try {
      [client, transport] = await connect();
    } catch (e) {
      if (!(e instanceof UnauthorizedError) || opts.flow !== 'code') throw e;
      // The SDK sent the "browser" to the authorization server; the redirect URI got a code.
      const pending = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: loggingFetch });
      await pending.finishAuth(provider.code());
      [client, transport] = await connect();
    }
    out.connected = true;
    out.protocolVersion = transport.protocolVersion;
    const tools = await client.listTools({}, { timeout });
    out.tools = tools.tools.map((t) => t.name);
    const call = { name: opts.tool, arguments: { text: opts.text } };
    out.result = await client.callTool(call, undefined, { timeout });
    if (opts.flow === 'code') {
      out.authorization = provider.asked;
      // The access token expires: the server's 401 makes the SDK refresh it.
      const before = provider._tokens.access_token;
      const saved = provider.saved;
      const expired = opts.expiredToken ?? 'expired';
      provider._tokens = { ...provider._tokens, access_token: expired };
      const result = await client.callTool(call, undefined, { timeout });
      const after = provider._tokens.access_token;
      out.refreshed = { result, tokenChanged: after !== before && after !== expired, tokensSaved: provider.saved - saved };
    }
    if (transport.sessionId) await transport.terminateSession();
    await client.close();
  } catch (e) {
    out.error = `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
  }
  const code = out.result && !out.error ? 0 : 1;
  process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(code));
}

main().catch((e) => {
  process.stderr.write(`ts_oauth_client.mjs: internal error: ${e?.stack ?? e}\n`);
  process.exit(3);
});
