#!/usr/bin/env node
// Scriptable MCP client on the TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2), for toolgate's tests.
// Same contract as py_client.py: connect to one server, run a JSON script of steps, print ONE JSON document.
//
// Usage:
//   node ts_client.mjs [OPTIONS] stdio CMD [ARGS...]
//   node ts_client.mjs [OPTIONS] http URL        (streamable HTTP, e.g. http://127.0.0.1:PORT/mcp)
//   node ts_client.mjs [OPTIONS] sse URL         (legacy HTTP+SSE, e.g. http://127.0.0.1:PORT/sse)
//
// Options (must come before the transport word):
//   --script JSON       JSON array of steps (or one step object); '@FILE' reads a file, '-' reads stdin.
//                       Default: [{"op":"info"},{"op":"list_tools"}]
//   --mode legacy       the only mode: TS SDK v1 speaks the initialize handshake only (<= 2025-11-25)
//   --timeout SECS      per-request timeout (default: 30)
//   --header 'K: V'     extra HTTP header (http/sse; repeatable)
//   --env K=V           extra env var for the stdio child (repeatable); the SDK otherwise passes
//                       only HOME LOGNAME PATH SHELL TERM USER
//   --inherit-env       pass this process's whole environment to the stdio child
//   --cwd DIR           working directory of the stdio child
//   --pretty            indent the JSON output
//
// Steps, output and exit status: see py_client.py (identical contract; "client" is "typescript-sdk").
//
// The SDK is loaded from $TOOLGATE_TEST_NPM_DIR/node_modules (default: ../deps/npm next to this file),
// so no NODE_PATH is needed (ESM imports ignore NODE_PATH anyway).

import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.TOOLGATE_TEST_NPM_DIR || path.resolve(HERE, '../deps/npm');
const requireSdk = createRequire(path.join(NPM_DIR, 'package.json'));

const KNOWN_OPS = new Set([
  'info',
  'list_tools',
  'list_resources',
  'list_resource_templates',
  'list_prompts',
  'call_tool',
  'read_resource',
  'get_prompt',
  'complete',
  'ping',
  'set_logging_level',
  'subscribe_resource',
  'unsubscribe_resource',
  'sleep',
]);

function usageError(msg) {
  const head = readFileSync(fileURLToPath(import.meta.url), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('//'))
    .map((l) => l.replace(/^\/\/ ?/, ''))
    .join('\n');
  process.stderr.write(`ts_client.mjs: ${msg}\n\n${head}\n`);
  process.exit(2);
}

function parseArgv(argv) {
  const opts = {
    script: '[{"op":"info"},{"op":"list_tools"}]',
    mode: 'legacy',
    timeout: 30,
    headers: {},
    env: {},
    inheritEnv: false,
    cwd: undefined,
    pretty: false,
  };
  let i = 0;
  const value = () => {
    if (i + 1 >= argv.length) usageError(`${argv[i]} needs a value`);
    i += 1;
    return argv[i];
  };
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') usageError('help');
    else if (a === '--script') opts.script = value();
    else if (a === '--mode') opts.mode = value();
    else if (a === '--timeout') {
      opts.timeout = Number(value());
      if (!(opts.timeout > 0)) usageError('--timeout needs a positive number of seconds');
    } else if (a === '--header') {
      const v = value();
      const k = v.indexOf(':');
      if (k < 0) usageError("--header needs 'Name: value'");
      opts.headers[v.slice(0, k).trim()] = v.slice(k + 1).trim();
    } else if (a === '--env') {
      const v = value();
      const k = v.indexOf('=');
      if (k < 0) usageError('--env needs K=V');
      opts.env[v.slice(0, k)] = v.slice(k + 1);
    } else if (a === '--inherit-env') opts.inheritEnv = true;
    else if (a === '--cwd') opts.cwd = value();
    else if (a === '--pretty') opts.pretty = true;
    else if (a === 'stdio' || a === 'http' || a === 'sse') {
      const rest = argv.slice(i + 1);
      if (rest.length === 0) usageError(`${a} needs ${a === 'stdio' ? 'a command' : 'a URL'}`);
      if (a !== 'stdio' && rest.length !== 1) usageError(`${a} takes exactly one URL`);
      opts.transport = a;
      opts.target = rest;
      break;
    } else usageError(`unknown argument '${a}'`);
  }
  if (!opts.transport) usageError('missing transport (stdio CMD... | http URL | sse URL)');
  if (opts.mode !== 'legacy') {
    usageError(`--mode ${opts.mode}: the TS SDK v1 client only speaks the handshake era (legacy)`);
  }
  let raw = opts.script;
  let script;
  try {
    if (raw === '-') raw = readFileSync(0, 'utf8');
    else if (raw.startsWith('@')) raw = readFileSync(raw.slice(1), 'utf8');
    script = JSON.parse(raw);
  } catch (e) {
    usageError(`bad --script: ${e.message}`);
  }
  if (script && !Array.isArray(script) && typeof script === 'object') script = [script];
  if (!Array.isArray(script) || !script.every((s) => s && typeof s === 'object' && 'op' in s)) {
    usageError('--script must be a JSON array of objects with an "op" key');
  }
  const unknown = [...new Set(script.map((s) => s.op))].filter((op) => !KNOWN_OPS.has(op));
  if (unknown.length) usageError(`unknown op(s) ${JSON.stringify(unknown)}; known: ${[...KNOWN_OPS].join(', ')}`);
  opts.script = script;
  return opts;
}

function errorJson(e) {
  if (e && e.name === 'McpError' && typeof e.code === 'number') {
    const out = {
      code: e.code,
      message: String(e.message).replace(/^MCP error -?\d+: /, ''),
      kind: e.code === -32001 ? 'timeout' : 'jsonrpc',
    };
    if (e.data !== undefined) out.data = e.data;
    return out;
  }
  const out = { code: null, message: `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`, kind: e?.name ?? 'Error' };
  if (e && (e.name === 'StreamableHTTPError' || e.name === 'SseError') && e.code !== undefined) {
    out.httpStatus = e.code;
  }
  return out;
}

const LIST_OPS = {
  list_tools: ['listTools', 'tools', 'name'],
  list_resources: ['listResources', 'resources', 'uri'],
  list_resource_templates: ['listResourceTemplates', 'resourceTemplates', 'uriTemplate'],
  list_prompts: ['listPrompts', 'prompts', 'name'],
};

async function runStep(client, step, reqOpts) {
  const op = step.op;
  if (op === 'info') {
    return {
      result: {
        protocolVersion: client.negotiatedProtocolVersion,
        serverInfo: client.getServerVersion(),
        capabilities: client.getServerCapabilities(),
        instructions: client.getInstructions(),
      },
    };
  }
  if (op in LIST_OPS) {
    const [method, field, key] = LIST_OPS[op];
    if ('cursor' in step) {
      const params = step.cursor == null ? {} : { cursor: step.cursor };
      const page = await client[method](params, reqOpts);
      return { result: page, names: (page[field] ?? []).map((x) => x[key]) };
    }
    const items = [];
    let cursor;
    let pages = 0;
    do {
      const page = await client[method](cursor === undefined ? {} : { cursor }, reqOpts);
      pages += 1;
      items.push(...(page[field] ?? []));
      cursor = page.nextCursor;
    } while (cursor && pages < 1000);
    return { result: { [field]: items, pages }, names: items.map((x) => x[key]) };
  }
  switch (op) {
    case 'call_tool':
      return { result: await client.callTool({ name: step.name, arguments: step.arguments }, undefined, reqOpts) };
    case 'read_resource':
      return { result: await client.readResource({ uri: step.uri }, reqOpts) };
    case 'get_prompt':
      return { result: await client.getPrompt({ name: step.name, arguments: step.arguments }, reqOpts) };
    case 'complete': {
      const params = { ref: step.ref, argument: step.argument };
      if (step.context) params.context = step.context;
      return { result: await client.complete(params, reqOpts) };
    }
    case 'ping':
      return { result: await client.ping(reqOpts) };
    case 'set_logging_level':
      return { result: await client.setLoggingLevel(step.level, reqOpts) };
    case 'subscribe_resource':
      return { result: await client.subscribeResource({ uri: step.uri }, reqOpts) };
    case 'unsubscribe_resource':
      return { result: await client.unsubscribeResource({ uri: step.uri }, reqOpts) };
    case 'sleep':
      await new Promise((r) => setTimeout(r, Number(step.ms ?? 0)));
      return { result: {} };
    default:
      throw new Error(`unknown op '${op}'`);
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`${what} timed out after ${ms} ms`), { name: 'TimeoutError' })), ms);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

function emit(out, opts, code) {
  process.stdout.write(JSON.stringify(out, null, opts.pretty ? 2 : undefined) + '\n', () => process.exit(code));
}

async function main() {
  const opts = parseArgv(process.argv.slice(2));
  const { Client } = requireSdk('@modelcontextprotocol/sdk/client/index.js');
  const sdkVersion = JSON.parse(
    readFileSync(path.join(NPM_DIR, 'node_modules/@modelcontextprotocol/sdk/package.json'), 'utf8'),
  ).version;

  // Record the negotiated protocol version for every transport (the SDK keeps it only for HTTP).
  class RecordingClient extends Client {
    async request(req, schema, options) {
      const res = await super.request(req, schema, options);
      if (req.method === 'initialize') this.negotiatedProtocolVersion = res?.protocolVersion;
      return res;
    }
  }

  const out = {
    client: 'typescript-sdk',
    sdkVersion,
    mode: opts.mode,
    transport: opts.transport,
    connected: false,
  };
  const notifications = [];
  const timeoutMs = Math.round(opts.timeout * 1000);
  const reqOpts = { timeout: timeoutMs };

  let transport;
  if (opts.transport === 'stdio') {
    const { StdioClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/stdio.js');
    const env = opts.inheritEnv ? { ...process.env, ...opts.env } : opts.env;
    transport = new StdioClientTransport({
      command: opts.target[0],
      args: opts.target.slice(1),
      env: Object.keys(env).length ? env : undefined,
      cwd: opts.cwd,
      stderr: 'inherit',
    });
  } else if (opts.transport === 'http') {
    const { StreamableHTTPClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/streamableHttp.js');
    transport = new StreamableHTTPClientTransport(new URL(opts.target[0]), { requestInit: { headers: opts.headers } });
  } else {
    const { SSEClientTransport } = requireSdk('@modelcontextprotocol/sdk/client/sse.js');
    transport = new SSEClientTransport(new URL(opts.target[0]), { requestInit: { headers: opts.headers } });
  }

  const client = new RecordingClient({ name: 'toolgate-ts-client', version: '0.1.0' }, { capabilities: {} });
  client.fallbackNotificationHandler = async (n) => {
    const { jsonrpc: _jsonrpc, ...rest } = n; // same shape as py_client.py: {method, params}
    notifications.push(rest);
  };
  // Transport-level errors (e.g. a failed SSE GET) are reported, not fatal.
  client.onerror = (e) => notifications.push({ transportError: `${e?.name ?? 'Error'}: ${e?.message ?? e}` });

  try {
    // The SDK's own request timeout (-32001) fires first; this only guards a hung transport.
    await withTimeout(client.connect(transport, reqOpts), timeoutMs + 2000, 'connect');
  } catch (e) {
    out.error = errorJson(e);
    try {
      await withTimeout(client.close(), 5000, 'close');
    } catch {
      // ignore: already failed
    }
    emit(out, opts, 1);
    return;
  }
  out.connected = true;
  out.protocolVersion = client.negotiatedProtocolVersion;
  out.serverInfo = client.getServerVersion();

  const steps = [];
  for (const step of opts.script) {
    const rec = { op: step.op };
    if ('id' in step) rec.id = step.id;
    const t0 = performance.now();
    try {
      const body = await withTimeout(runStep(client, step, reqOpts), timeoutMs + 2000, step.op);
      rec.ok = true;
      Object.assign(rec, body);
    } catch (e) {
      rec.ok = false;
      rec.error = errorJson(e);
    }
    rec.ms = Math.round((performance.now() - t0) * 1000) / 1000;
    steps.push(rec);
  }
  out.steps = steps;
  out.notifications = [...notifications]; // snapshot: errors raised while closing are not reported
  try {
    // Like the Python SDK: end the HTTP session with DELETE before closing.
    if (opts.transport === 'http' && transport.sessionId) {
      await withTimeout(transport.terminateSession(), 5000, 'terminateSession');
    }
    await withTimeout(client.close(), 5000, 'close');
  } catch (e) {
    out.closeError = errorJson(e);
  }
  emit(out, opts, 0);
}

main().catch((e) => {
  process.stderr.write(`ts_client.mjs: internal error: ${e?.stack ?? e}\n`);
  process.exit(3);
});
