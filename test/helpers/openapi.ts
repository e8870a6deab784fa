/**
 * Validates responses against the OpenAPI document shipped in `stoat-api` (the clients' contract).
 * `request()` in `http.ts` calls `checkResponse` for every response, so every route a test touches is
 * checked; a mismatch throws, failing the test. Two bodies are the spec's own shapes and are not checked:
 * 429 `{"retry_after": ms}` and 409 `{"type":"DuplicateNonce"}` (exactly that, with no `location`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// The package does not export the file; read it from node_modules.
const docPath = path.join(import.meta.dirname, '../../node_modules/stoat-api/OpenAPI.json');
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const doc = JSON.parse(fs.readFileSync(docPath, 'utf8')) as any;
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

/** OpenAPI 3.0 `nullable` next to `$ref`/`allOf` (no `type`) becomes `anyOf [schema, null]` for ajv. */
function fixNullable(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(fixNullable);
  if (!node || typeof node !== 'object') return node;
  const o = Object.fromEntries(Object.entries(node as Record<string, unknown>).map(([k, v]) => [k, fixNullable(v)]));
  if (o.nullable === true && o.type === undefined) {
    delete o.nullable;
    return { anyOf: [o, { type: 'null' }] };
  }
  return o;
}
doc.components = fixNullable(doc.components);

/**
 * The document's colour patterns (Masquerade, SendableEmbed) are Rust regexes with a leading `(?i)` inline
 * flag, which JavaScript does not know: such a pattern is compiled without it and with the `i` flag.
 */
const regExp = Object.assign(
  (pattern: string, flags: string) => (pattern.startsWith('(?i)') ? new RegExp(pattern.slice(4), `${flags}i`) : new RegExp(pattern, flags)),
  { code: 'new RegExp' },
);
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true, inlineRefs: false, code: { regExp } });
(addFormats as unknown as (a: Ajv) => void)(ajv);
for (const f of ['int32', 'int64', 'uint', 'uint8', 'uint16', 'uint32', 'uint64', 'double', 'float', 'binary', 'byte']) ajv.addFormat(f, true);
ajv.addSchema({ components: doc.components }, 'openapi');

interface Operation {
  method: string;
  regex: RegExp;
  template: string;
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

const operations: Operation[] = [];
for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: Operation['responses'] }>>)) {
  const pattern = template
    .split('/')
    .map((seg) => (/^\{.+\}$/.test(seg) ? '[^/]+' : seg.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('/');
  for (const [method, op] of Object.entries(item)) {
    operations.push({ method: method.toUpperCase(), regex: new RegExp(`^${pattern}/?$`), template, responses: op.responses });
  }
}
// Literal paths before templated ones (`/users/@me` before `/users/{target}`).
operations.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));

const cache = new Map<string, ValidateFunction>();
function validator(schema: unknown): ValidateFunction {
  const key = JSON.stringify(schema);
  let v = cache.get(key);
  if (!v) {
    v = ajv.compile({ ...(schema as object), $id: undefined } as object);
    cache.set(key, v);
  }
  return v;
}

/** Rewrites `#/components/...` refs so they resolve against the registered document. */
function rebase(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/'));
}

/** Whether responses are checked (on unless OPENAPI_CHECK=0). */
export const OPENAPI_CHECK = process.env.OPENAPI_CHECK !== '0';

/** The OpenAPI operation for a request, if the document has one. */
export function findOperation(method: string, path: string): Operation | undefined {
  const p = path.split('?')[0]!;
  return operations.find((o) => o.method === method && o.regex.test(p));
}

/** Throws when a response does not match the document. Unknown routes and 429s are not checked. */
export function checkResponse(method: string, path: string, status: number, body: unknown, text: string): void {
  if (!OPENAPI_CHECK || status === 429) return;
  if (status === 409 && text === '{"type":"DuplicateNonce"}') return;
  const op = findOperation(method, path);
  if (!op) return;
  const r = op.responses[String(status)] ?? (status >= 400 ? op.responses.default : undefined) ?? op.responses[`${String(status)[0]}XX`];
  if (!r) {
    if (status === 204 && text.length === 0) return;
    if (status >= 200 && status < 300 && Object.keys(op.responses).some((k) => k.startsWith('2'))) {
      throw new Error(`OpenAPI: ${method} ${op.template} answered ${status}, the document has ${Object.keys(op.responses).join(', ')}`);
    }
    return;
  }
  let schema = r.content?.['application/json']?.schema;
  // Authentication routes answer with the authentication errors, which the document lists separately.
  if (schema && status >= 400 && op.template.startsWith('/auth/')) {
    schema = { anyOf: [schema, { $ref: '#/components/schemas/Authifier Error' }] };
  }
  if (!schema) {
    if (status === 204 && text.length > 0) throw new Error(`OpenAPI: ${method} ${op.template} 204 with a body`);
    return;
  }
  const v = validator(rebase(schema));
  if (!v(body)) {
    const errs = (v.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    throw new Error(`OpenAPI: ${method} ${op.template} ${status} does not match the document: ${errs}\nbody: ${text.slice(0, 500)}`);
  }
}

/**
 * Throws unless `value` matches the document's component schema `name` (e.g. `User`, `Member`), for answers
 * of routes the document does not describe (the audit log) that embed its objects.
 */
export function checkSchema(name: string, value: unknown): void {
  const v = validator(rebase({ $ref: `#/components/schemas/${name}` }));
  if (!v(value)) {
    const errs = (v.errors ?? []).slice(0, 5).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    throw new Error(`OpenAPI: not a ${name}: ${errs}\nvalue: ${JSON.stringify(value).slice(0, 500)}`);
  }
}
