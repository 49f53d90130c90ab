// Validates rendered Kubernetes manifests (multi-document YAML, e.g. the
// output of `helm template`) against the API
// schemas, offline:
//   1. kubernetes-models (Kubernetes ~1.32 OpenAPI, compiled Ajv validators)
//      and @kubernetes-models/prometheus-operator (ServiceMonitor,
//      PrometheusRule, ...): types, required fields, enums, formats;
//   2. strictness, which those validators lack (their schemas allow any
//      extra property): every object is walked against the TypeScript
//      declarations the same packages ship (generated from the same OpenAPI
//      definitions), and each property the schema does not define is an
//      error, like `kubectl apply --validate=strict`.
// Prints "OK Kind/name" per valid object and "ERROR Kind/name: path: message"
// per problem; exit 1 on any error (or an unknown apiVersion/kind).
//
//   node tests/js/validate_k8s.mjs FILE.yaml [FILE.yaml ...]   ("-" = stdin)
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = path.dirname(fileURLToPath(import.meta.url));

// apiVersion -> [npm package (class modules), subpath]
function modelPackage(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") return ["@kubernetes-models/prometheus-operator", `${group}/${version}`];
  return ["kubernetes-models", group ? `${group}/${version}` : version];
}

// ---------------------------------------------------------------------------
// A small reader of the generated .d.ts declarations: imports, exports,
// interfaces and type aliases, with the type syntax these files use.

function tokenize(src, file) {
  const toks = [];
  const re = /\s+|\/\*[\s\S]*?\*\/|\/\/[^\n]*|("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')|([A-Za-z_$][\w$]*)|(-?\d+(?:\.\d+)?)|(=>|\.\.\.|[{}()<>[\];:,?|&=.*])/y;
  let m;
  while (re.lastIndex < src.length) {
    const at = re.lastIndex;
    if (!(m = re.exec(src))) throw new Error(`${file}: cannot read at offset ${at}: ${src.slice(at, at + 20)}`);
    if (m[1]) toks.push({ t: "str", v: JSON.parse(m[1][0] === "'" ? `"${m[1].slice(1, -1).replace(/"/g, '\\"')}"` : m[1]) });
    else if (m[2]) toks.push({ t: "id", v: m[2] });
    else if (m[3]) toks.push({ t: "num", v: Number(m[3]) });
    else if (m[4]) toks.push({ t: "p", v: m[4] });
  }
  return toks;
}

// Names inline object types after their property, for messages.
function nameInline(t, label) {
  if (t.k === "obj" && !t.name) t.name = label;
  else if (t.k === "array") nameInline(t.elem, `${label}[]`);
  else if (t.k === "ref" && (t.name === "Array" || t.name === "ReadonlyArray") && t.args[0]) nameInline(t.args[0], `${label}[]`);
  else if (t.k === "union") t.types.forEach((u) => nameInline(u, label));
}

class Parser {
  constructor(toks, file) { this.toks = toks; this.i = 0; this.file = file; }
  peek(o = 0) { return this.toks[this.i + o]; }
  is(v, o = 0) { const t = this.peek(o); return t && (t.t === "p" || t.t === "id") && t.v === v; }
  next() { return this.toks[this.i++]; }
  expect(v) {
    const t = this.next();
    if (!t || t.v !== v) throw new Error(`${this.file}: expected "${v}", got ${t ? JSON.stringify(t.v) : "end"}`);
    return t;
  }
  ident() {
    const t = this.next();
    if (!t || t.t !== "id") throw new Error(`${this.file}: expected a name, got ${t ? JSON.stringify(t.v) : "end"}`);
    return t.v;
  }
  // Skips to just past the next ";" (or the end of a balanced {...}) at depth 0.
  skipStatement() {
    let depth = 0;
    while (this.i < this.toks.length) {
      const t = this.next();
      if (t.t !== "p") continue;
      if ("{([<".includes(t.v)) depth++;
      else if ("})]>".includes(t.v)) { depth--; if (depth === 0 && t.v === "}" && !this.is(";") && !this.is(".")) return; }
      else if (t.v === ";" && depth <= 0) return;
    }
  }
  skipBalanced(open, close) {
    let depth = 0;
    do {
      const t = this.next();
      if (!t) return;
      if (t.v === open) depth++;
      else if (t.v === close) depth--;
    } while (depth > 0);
  }
  type() {
    if (this.is("|")) this.next();
    const alts = [this.inter()];
    while (this.is("|")) { this.next(); alts.push(this.inter()); }
    return alts.length === 1 ? alts[0] : { k: "union", types: alts };
  }
  inter() {
    const parts = [this.postfix()];
    while (this.is("&")) { this.next(); parts.push(this.postfix()); }
    return parts.length === 1 ? parts[0] : { k: "inter", types: parts };
  }
  postfix() {
    let t = this.primary();
    while (this.is("[")) {
      this.next();
      if (this.is("]")) { this.next(); t = { k: "array", elem: t }; }
      else { const idx = this.type(); this.expect("]"); t = { k: "indexed", obj: t, index: idx }; }
    }
    return t;
  }
  primary() {
    const t = this.peek();
    if (!t) throw new Error(`${this.file}: unexpected end of a type`);
    if (t.t === "str" || t.t === "num") { this.next(); return { k: "lit", v: t.v }; }
    if (this.is("(")) { this.next(); const inner = this.type(); this.expect(")"); return inner; }
    if (this.is("{")) return this.objectType();
    if (t.t === "id") {
      let name = this.ident();
      while (this.is(".")) { this.next(); name += "." + this.ident(); }
      const args = [];
      if (this.is("<")) {
        this.next();
        args.push(this.type());
        while (this.is(",")) { this.next(); args.push(this.type()); }
        this.expect(">");
      }
      return { k: "ref", name, args };
    }
    throw new Error(`${this.file}: unexpected ${JSON.stringify(t.v)} in a type`);
  }
  objectType() {
    this.expect("{");
    const props = new Map();
    let index = null;
    while (!this.is("}")) {
      if (this.is("readonly") && !this.is(":", 1) && !this.is("?", 1)) this.next();
      if (this.is("[")) {
        this.next(); this.ident(); this.expect(":"); this.type(); this.expect("]");
        this.expect(":");
        index = this.type();
      } else {
        const key = this.next();
        if (!key || (key.t !== "str" && key.t !== "id")) throw new Error(`${this.file}: expected a property name, got ${key && JSON.stringify(key.v)}`);
        const optional = this.is("?") ? (this.next(), true) : false;
        if (this.is("(") || this.is("<")) throw new Error(`${this.file}: methods are not supported (${key.v})`);
        this.expect(":");
        const type = this.type();
        nameInline(type, String(key.v));
        props.set(String(key.v), { type, optional });
      }
      if (this.is(";") || this.is(",")) this.next();
    }
    this.expect("}");
    return { k: "obj", props, index };
  }
  // The declarations of one file: { imports, exports, decls }.
  declarations() {
    const imports = new Map(); // local name -> {from, name}
    const exports = new Map(); // exported name -> {local} | {from, name}
    const decls = new Map();   // local name -> type node
    while (this.i < this.toks.length) {
      if (this.is("import")) {
        this.next();
        if (this.is("type")) this.next();
        if (!this.is("{")) { this.skipStatement(); continue; }
        this.next();
        const names = [];
        while (!this.is("}")) {
          const name = this.ident();
          const local = this.is("as") ? (this.next(), this.ident()) : name;
          names.push([name, local]);
          if (this.is(",")) this.next();
        }
        this.expect("}"); this.expect("from");
        const from = this.next().v;
        if (this.is(";")) this.next();
        for (const [name, local] of names) imports.set(local, { from, name });
        continue;
      }
      const exported = this.is("export") ? (this.next(), true) : false;
      if (this.is("declare")) this.next();
      if (this.is("{")) { // export { A as B } [from "x"];
        this.next();
        const names = [];
        while (!this.is("}")) {
          if (this.is("type")) this.next();
          const name = this.ident();
          const as = this.is("as") ? (this.next(), this.ident()) : name;
          names.push([name, as]);
          if (this.is(",")) this.next();
        }
        this.expect("}");
        let from = null;
        if (this.is("from")) { this.next(); from = this.next().v; }
        if (this.is(";")) this.next();
        for (const [name, as] of names) exports.set(as, from ? { from, name } : { local: name });
        continue;
      }
      if (this.is("*")) { this.skipStatement(); continue; } // export * from: unused by these packages
      if (this.is("interface")) {
        this.next();
        const name = this.ident();
        const start = this.i;
        try {
          if (this.is("<")) throw new Error(`${this.file}: generic interface ${name} is not supported`);
          const bases = [];
          if (this.is("extends")) {
            this.next();
            bases.push(this.primary());
            while (this.is(",")) { this.next(); bases.push(this.primary()); }
          }
          const body = this.objectType();
          decls.set(name, { k: "obj", props: body.props, index: body.index, bases, name });
        } catch (e) {
          this.i = start;
          while (this.i < this.toks.length && !this.is("{")) this.next();
          this.skipBalanced("{", "}");
          decls.set(name, { k: "bad", error: e.message });
        }
        if (exported) exports.set(name, { local: name });
        continue;
      }
      if (this.is("type")) {
        this.next();
        const name = this.ident();
        const start = this.i;
        try {
          if (this.is("<")) throw new Error(`${this.file}: generic type ${name} is not supported`);
          this.expect("=");
          const t = this.type();
          if (!this.is(";")) throw new Error(`${this.file}: type ${name}: expected ";"`);
          this.next();
          decls.set(name, t);
        } catch (e) {
          this.i = start;
          this.skipStatement();
          decls.set(name, { k: "bad", error: e.message });
        }
        if (exported) exports.set(name, { local: name });
        continue;
      }
      if (this.is("class")) { // the Model classes: only their interfaces matter
        while (this.i < this.toks.length && !this.is("{")) this.next();
        this.skipBalanced("{", "}");
        continue;
      }
      this.skipStatement();
    }
    return { imports, exports, decls };
  }
}

const files = new Map(); // absolute .d.ts path -> parsed file

function loadDts(file) {
  let f = files.get(file);
  if (!f) {
    f = new Parser(tokenize(readFileSync(file, "utf8"), file), file).declarations();
    f.path = file;
    files.set(file, f);
  }
  return f;
}

function resolveModule(spec, fromFile) {
  const candidates = (base) => [`${base}.d.ts`, path.join(base, "index.d.ts")];
  if (spec.startsWith(".")) {
    for (const c of candidates(path.resolve(path.dirname(fromFile), spec))) if (existsSync(c)) return c;
    throw new Error(`cannot resolve ${spec} from ${fromFile}`);
  }
  const parts = spec.split("/");
  const pkg = spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  const sub = parts.slice(pkg.split("/").length).join("/");
  for (let dir = path.dirname(fromFile); ; dir = path.dirname(dir)) {
    const pdir = path.join(dir, "node_modules", pkg);
    if (existsSync(path.join(pdir, "package.json"))) {
      const pj = JSON.parse(readFileSync(path.join(pdir, "package.json"), "utf8"));
      const key = sub ? `./${sub}` : ".";
      for (const [pat, target] of Object.entries(pj.exports || {})) {
        const types = typeof target === "object" && target.types;
        if (!types) continue;
        if (pat === key) return path.join(pdir, types);
        const star = pat.indexOf("*");
        if (star >= 0 && key.startsWith(pat.slice(0, star)) && key.endsWith(pat.slice(star + 1))) {
          return path.join(pdir, types.replace("*", key.slice(star, key.length - (pat.length - star - 1))));
        }
      }
      if (!sub && pj.types) return path.join(pdir, pj.types);
      for (const c of candidates(path.join(pdir, sub))) if (existsSync(c)) return c;
      throw new Error(`cannot resolve ${spec} from ${fromFile}`);
    }
    if (dir === path.dirname(dir)) throw new Error(`package ${pkg} not found from ${fromFile}`);
  }
}

const builtin = new Set(["string", "number", "boolean", "null", "undefined", "bigint", "true", "false", "Date"]);
const open = new Set(["any", "unknown", "object", "never", "Object"]);

// Looks a name up in a file's scope: its declarations, then its imports.
function lookupName(name, file, seen = new Set()) {
  const key = `${file.path}#${name}`;
  if (seen.has(key)) throw new Error(`circular alias ${name} in ${file.path}`);
  seen.add(key);
  if (file.decls.has(name)) return { node: file.decls.get(name), file };
  const imp = file.imports.get(name);
  if (imp) return lookupExport(imp.name, loadDts(resolveModule(imp.from, file.path)), seen);
  throw new Error(`${file.path}: unknown type ${name}`);
}

function lookupExport(name, file, seen) {
  const ex = file.exports.get(name);
  if (!ex) {
    if (file.decls.has(name)) return { node: file.decls.get(name), file };
    throw new Error(`${file.path}: does not export ${name}`);
  }
  if (ex.from) return lookupExport(ex.name, loadDts(resolveModule(ex.from, file.path)), seen);
  return lookupName(ex.local, file, seen);
}

// A type node in its file -> a resolved shape:
//   {k:"any"} {k:"scalar"} {k:"array", elem} {k:"union", alts}
//   {k:"obj", name, props: Map(name -> {node, file}), index: {node, file}|null}
const shapes = new WeakMap();
function shape(node, file) {
  switch (node.k) {
    case "lit": return { k: "scalar" };
    case "bad": return { k: "bad", error: node.error };
    case "array": return { k: "array", elem: { node: node.elem, file } };
    case "union": return { k: "union", alts: node.types.map((t) => shape(t, file)) };
    case "indexed": return { k: "any" };
    case "inter": {
      const parts = node.types.map((t) => shape(t, file));
      if (parts.some((p) => p.k !== "obj")) return parts.find((p) => p.k !== "obj");
      const props = new Map(), names = [];
      let index = null;
      for (const p of parts) { for (const [k, v] of p.props) props.set(k, v); index = index || p.index; names.push(p.name); }
      return { k: "obj", name: names.join(" & "), props, index };
    }
    case "obj": {
      if (shapes.has(node)) return shapes.get(node);
      const props = new Map();
      let index = null;
      const s = { k: "obj", name: node.name || "object", props, index };
      shapes.set(node, s);
      for (const b of node.bases || []) {
        const bs = shape(b, file);
        if (bs.k !== "obj") throw new Error(`${file.path}: ${node.name} extends a non-object`);
        for (const [k, v] of bs.props) props.set(k, v);
        s.index = s.index || bs.index;
      }
      for (const [k, v] of node.props) props.set(k, { node: v.type, file });
      if (node.index) s.index = { node: node.index, file };
      return s;
    }
    case "ref": {
      if (builtin.has(node.name)) return { k: "scalar" };
      if (open.has(node.name)) return { k: "any" };
      if (node.name === "Array" || node.name === "ReadonlyArray") return { k: "array", elem: { node: node.args[0], file } };
      if (node.name === "Record") return { k: "obj", name: "Record", props: new Map(), index: { node: node.args[1], file } };
      const found = lookupName(node.name, file);
      return shape(found.node, found.file);
    }
  }
  throw new Error(`${file.path}: cannot check a type of kind ${node.k}`);
}

function flatten(s, out = []) {
  if (s.k === "union") s.alts.forEach((a) => flatten(a, out));
  else out.push(s);
  return out;
}

const isIdent = (k) => /^[A-Za-z_$][\w$]*$/.test(k);
const child = (p, k) => (isIdent(k) ? (p ? `${p}.${k}` : k) : `${p}[${JSON.stringify(k)}]`);

function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length][b.length];
}

function suggest(key, names) {
  const best = [...names].map((n) => [n, n.toLowerCase() === key.toLowerCase() ? 0 : distance(key, n)])
    .filter(([, d]) => d <= 2).sort((x, y) => x[1] - y[1]);
  return best.length ? ` (did you mean "${best[0][0]}"?)` : "";
}

// Reports every property of value that the shape does not define.
function strict(value, s, p, errors) {
  if (value === null || value === undefined) return;
  const alts = flatten(s);
  const bad = alts.find((a) => a.k === "bad");
  if (bad) { errors.push([p, `cannot check strictly: ${bad.error}`]); return; }
  if (alts.some((a) => a.k === "any")) return;
  if (Array.isArray(value)) {
    const elems = alts.filter((a) => a.k === "array");
    if (!elems.length) return; // a type error: the schema validator reports it
    value.forEach((v, i) => {
      const es = elems.map((a) => shape(a.elem.node, a.elem.file));
      strict(v, { k: "union", alts: es }, `${p}[${i}]`, errors);
    });
    return;
  }
  if (typeof value !== "object") return;
  const objs = alts.filter((a) => a.k === "obj");
  if (!objs.length) return;
  for (const [k, v] of Object.entries(value)) {
    const subs = [];
    for (const o of objs) {
      const prop = o.props.get(k) || o.index;
      if (prop) subs.push(shape(prop.node, prop.file));
    }
    if (!subs.length) {
      const names = new Set(objs.flatMap((o) => [...o.props.keys()]));
      const where = objs.map((o) => o.name.replace(/^I(?=[A-Z])/, "")).join(" | ");
      errors.push([child(p, k), `unknown field "${k}" in ${where}${suggest(k, names)}`]);
      continue;
    }
    strict(v, { k: "union", alts: subs }, child(p, k), errors);
  }
}

// ---------------------------------------------------------------------------

function pathOf(instancePath) {
  return instancePath.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((p, k) => (/^\d+$/.test(k) ? `${p}[${k}]` : child(p, k)), "");
}

async function validateObject(obj) {
  const errors = [];
  const { apiVersion, kind } = obj;
  if (typeof apiVersion !== "string" || typeof kind !== "string") return [["", "apiVersion and kind are required strings"]];
  const [pkg, sub] = modelPackage(apiVersion);
  let Model;
  try {
    Model = (await import(`${pkg}/${sub}`))[kind];
  } catch {
    Model = undefined;
  }
  if (typeof Model !== "function" || Model.kind !== kind) return [["", `unknown apiVersion/kind ${apiVersion} ${kind} (no schema in ${pkg})`]];
  try {
    new Model(obj).validate();
  } catch (e) {
    if (!e.errors) throw e;
    for (const err of e.errors) {
      let msg = err.message;
      if (err.params && err.params.allowedValues) msg += `: ${err.params.allowedValues.join(", ")}`;
      errors.push([pathOf(err.instancePath), msg]);
    }
  }
  const dts = resolveModule(`${pkg}/${sub}/${kind}`, path.join(here, "validate_k8s.mjs"));
  const root = lookupName(`I${kind}`, loadDts(dts));
  strict(obj, shape(root.node, root.file), "", errors);
  return errors;
}

const args = process.argv.slice(2);
if (!args.length) {
  console.error("usage: node validate_k8s.mjs FILE.yaml [FILE.yaml ...]   (- reads stdin)");
  process.exit(2);
}
let objects = 0, failed = 0;
for (const file of args) {
  const text = readFileSync(file === "-" ? 0 : file, "utf8");
  const docs = parseAllDocuments(text, { version: "1.1", prettyErrors: true });
  for (const [i, doc] of (Array.isArray(docs) ? docs : [docs]).entries()) {
    const where = `${file} document ${i + 1}`;
    if (doc.errors.length) {
      failed++;
      for (const e of doc.errors) console.log(`ERROR ${where}: YAML: ${e.message}`);
      continue;
    }
    const obj = doc.toJS({ maxAliasCount: 100 });
    if (obj === null || obj === undefined) continue; // an empty document
    objects++;
    if (typeof obj !== "object" || Array.isArray(obj)) {
      failed++;
      console.log(`ERROR ${where}: not a mapping`);
      continue;
    }
    const name = `${obj.kind}/${(obj.metadata && obj.metadata.name) || `<unnamed, ${where}>`}`;
    let errors;
    try {
      errors = await validateObject(obj);
    } catch (e) {
      errors = [["", `validator failed: ${e.stack || e}`]];
    }
    if (errors.length) {
      failed++;
      for (const [p, msg] of errors) console.log(`ERROR ${name}: ${p || "(object)"}: ${msg}`);
    } else {
      console.log(`OK ${name}`);
    }
  }
}
console.log(`validate_k8s: ${objects} objects, ${Math.max(objects - failed, 0)} valid, ${failed} with errors`);
if (!objects) console.log("ERROR: no objects to validate");
process.exit(failed || !objects ? 1 : 0);
