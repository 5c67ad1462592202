// Checks kilnd's answers against api/openapi.yaml: every recorded response must be one the
// document lists for its operation (status), and its JSON body must match that response's
// schema. The api tier records what it receives (tests/api/api_fixture.cc) and runs this at the
// end of each test; a violation fails that test.
//
//   node validate-responses.mjs RECORDS.jsonl [OPENAPI.yaml]
//
// A record: {"test", "method", "path" (with the query), "status", "content_type", "body"}.
// Prints one line per violation and exits 1 when there is any; 2 on bad usage.

import { createHash } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import YAML from "yaml";

const here = dirname(fileURLToPath(import.meta.url));
const [recordsPath, docPath = join(here, "..", "..", "api", "openapi.yaml")] = process.argv.slice(2);
if (!recordsPath) {
  console.error("usage: validate-responses.mjs RECORDS.jsonl [OPENAPI.yaml]");
  process.exit(2);
}

// The parsed document, cached as JSON by its content hash: parsing the YAML is most of a run's
// time (~0.4 s of ~0.6 s), and the api tier runs this once per test.
function loadDocument(path) {
  const text = readFileSync(path, "utf8");
  const cache = join(tmpdir(), `kiln-openapi-${createHash("sha256").update(text).digest("hex").slice(0, 16)}.json`);
  try {
    return JSON.parse(readFileSync(cache, "utf8"));
  } catch {}
  const parsed = YAML.parse(text);
  try {
    const partial = `${cache}.${process.pid}`;
    writeFileSync(partial, JSON.stringify(parsed));
    renameSync(partial, cache);  // whole or not at all: another test may read it at once
  } catch {}
  return parsed;
}
const doc = loadDocument(docPath);
const DOC_ID = "https://kiln.invalid/openapi.json";
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addSchema({ ...doc, $id: DOC_ID });

// JSON pointer of a path in the document.
const pointer = (parts) => "#/" + parts.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("/");

// The document's path templates, literal segments first so /rollouts/{id} does not take
// /rollouts/{id}/pods.
const templates = Object.keys(doc.paths ?? {}).map((t) => ({
  template: t,
  segments: t.split("/").filter(Boolean),
}));
// A path segment as the router sees it; a malformed escape (a fuzz test's) stays as it came.
function decodeSegment(seg) {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}
function matchPath(path) {
  const segs = path.split("?")[0].split("/").filter(Boolean);
  let best = null;
  let bestLiterals = -1;
  for (const t of templates) {
    if (t.segments.length !== segs.length) continue;
    let literals = 0;
    let ok = true;
    for (let i = 0; i < segs.length && ok; ++i) {
      if (t.segments[i].startsWith("{")) continue;
      if (t.segments[i] !== decodeSegment(segs[i])) ok = false;
      else ++literals;
    }
    if (ok && literals > bestLiterals) {
      best = t.template;
      bestLiterals = literals;
    }
  }
  return best;
}

// A response object, with a $ref to components/responses resolved.
function resolveResponse(response, where) {
  let r = response;
  let p = where;
  for (let hops = 0; r && r.$ref && hops < 8; ++hops) {
    const parts = r.$ref.replace(/^#\//, "").split("/").map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
    p = parts;
    r = parts.reduce((node, key) => (node == null ? node : node[key]), doc);
  }
  return { response: r, parts: p };
}

const validators = new Map();
function validatorFor(parts) {
  const key = parts.join("\u0000");
  if (!validators.has(key)) validators.set(key, ajv.compile({ $ref: DOC_ID + pointer(parts) }));
  return validators.get(key);
}

const violations = [];
const lines = readFileSync(recordsPath, "utf8").split("\n").filter((l) => l.trim() !== "");
let checked = 0;
for (const line of lines) {
  const rec = JSON.parse(line);
  const label = `${rec.test ? rec.test + ": " : ""}${rec.method} ${rec.path} -> ${rec.status}`;
  if (!rec.status) continue;  // the transport failed; the test reports that itself
  const template = matchPath(rec.path);
  if (!template) {
    // The router's 404 for a path the API does not have, the server's 400 for a target it
    // cannot decode (both in the Error shape), or the console's files.
    if (!rec.path.startsWith("/api/")) continue;
    if (rec.status !== 404 && rec.status !== 400) {
      violations.push(`${label}: no path of the document matches`);
      continue;
    }
    const validate = validatorFor(["components", "schemas", "Error"]);
    let body = null;
    try {
      body = JSON.parse(rec.body);
    } catch {}
    if (!validate(body)) violations.push(`${label}: the error body is not the document's Error: ${rec.body.slice(0, 200)}`);
    continue;
  }
  const method = rec.method.toLowerCase() === "head" ? "get" : rec.method.toLowerCase();
  if (method === "options") continue;  // served on every route, answered 204 with Allow
  const op = doc.paths[template][method];
  if (!op) {
    if (rec.status !== 405) violations.push(`${label}: the document has no ${rec.method} ${template}`);
    continue;
  }
  const responses = op.responses ?? {};
  const status = String(rec.status);
  const key = status in responses ? status : `${status[0]}XX` in responses ? `${status[0]}XX` : "default" in responses ? "default" : null;
  if (!key) {
    violations.push(`${label}: ${op.operationId ?? template} documents no ${status} (it lists ${Object.keys(responses).join(", ")})`);
    continue;
  }
  ++checked;
  const { response, parts } = resolveResponse(responses[key], ["paths", template, method, "responses", key]);
  if (!response) {
    violations.push(`${label}: the response ${key} of ${template} does not resolve`);
    continue;
  }
  if (rec.method.toUpperCase() === "HEAD" || rec.status === 204 || !rec.body) continue;
  const content = response.content ?? {};
  const type = (rec.content_type || "").split(";")[0].trim();
  if (!type.endsWith("json")) continue;  // text answers (metrics, YAML) have no schema to check
  const mediaKey = type in content ? type : Object.keys(content).find((k) => k.endsWith("json"));
  if (!mediaKey) {
    violations.push(`${label}: the document gives no JSON content for ${key}, kilnd sent ${type}`);
    continue;
  }
  if (!content[mediaKey].schema) {
    violations.push(`${label}: ${key} of ${op.operationId ?? template} has no schema`);
    continue;
  }
  let body;
  try {
    body = JSON.parse(rec.body);
  } catch (e) {
    violations.push(`${label}: the body is not JSON (${e.message})`);
    continue;
  }
  const validate = validatorFor([...parts, "content", mediaKey, "schema"]);
  if (!validate(body)) {
    const errs = validate.errors
      .slice(0, 5)
      .map((e) => `${e.instancePath || "/"} ${e.message}${e.params && e.params.allowedValues ? " " + JSON.stringify(e.params.allowedValues) : ""}${e.params && e.params.additionalProperty ? " (" + e.params.additionalProperty + ")" : ""}`)
      .join("; ");
    violations.push(`${label}: body does not match ${op.operationId ?? template} ${key}: ${errs}; body: ${rec.body.slice(0, 300)}`);
  }
}

for (const v of violations) console.log(v);
if (process.env.KILN_CONTRACT_VERBOSE) console.error(`checked ${checked} of ${lines.length} responses`);
process.exit(violations.length ? 1 : 0);
