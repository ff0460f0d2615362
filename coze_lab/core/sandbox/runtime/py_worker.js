// Pyodide worker: one long-lived Python interpreter, restored from a memory snapshot.
// host.js binds it to ONE owner for its whole life, so nothing a run does here can reach
// another owner's runs. It talks only to the control thread (host.js, another realm) over a
// private MessagePort; the code it runs never sees that port, and the intrinsics this file
// needs for the protocol are captured below, before any other code runs in this realm.
import { loadPyodide } from "npm:pyodide@__PYODIDE_VERSION__";

// ---- intrinsics, captured first ----------------------------------------------------------
const apply = Reflect.apply;
const ownKeys = Reflect.ownKeys;
const getProto = Reflect.getPrototypeOf;
const gOPD = Object.getOwnPropertyDescriptor;
const defineProperty = Object.defineProperty;
const sameValue = Object.is;
const portPost = MessagePort.prototype.postMessage;
const selfPost = globalThis.postMessage;
const atomicsStore = Atomics.store;
const tdDecode = TextDecoder.prototype.decode;
const decoder = new TextDecoder();
const U8 = Uint8Array;
const TAProto = getProto(Uint8Array.prototype);
const taLength = gOPD(TAProto, "length").get;
const taSet = TAProto.set;
const taSlice = TAProto.slice;
const taSubarray = TAProto.subarray;
const perf = globalThis.performance;
const perfNow = getProto(perf).now;
const now = () => apply(perfNow, perf, []);
const MapC = Map;
const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapHas = Map.prototype.has;
const setAdd = Set.prototype.add, setDelete = Set.prototype.delete, setClear = Set.prototype.clear;
const setSize = gOPD(Set.prototype, "size").get;
const SetC = Set;
const StringC = String;
const rawSetTimeout = globalThis.setTimeout, rawClearTimeout = globalThis.clearTimeout;
const rawSetInterval = globalThis.setInterval, rawClearInterval = globalThis.clearInterval;
const rawClose = globalThis.close;
const rawExit = Deno.exit;
const ENV = { HOME: "/home/pyodide" };
const CWD = "/home/pyodide";

let port = null;
let booted = false;
const post = (msg, transfer) => apply(portPost, port, transfer ? [msg, transfer] : [msg]);

self.onmessage = (ev) => {
  if (booted) return; // only the first (init) message is trusted
  booted = true;
  boot(ev.data).catch((err) => {
    const msg = { type: "boot_error", message: StringC(err && err.stack || err) };
    if (port) post(msg); else apply(selfPost, globalThis, [msg]);
  });
};
apply(selfPost, globalThis, [{ type: "hello" }]);

// An interpreter that closes itself (js.close(), js.Deno.exit()) says so first, so the run
// fails at once with worker_crashed instead of waiting for its time limit.
function closing(kind) {
  return function () {
    if (port) post({ type: "closing", how: kind });
    return kind === "exit" ? apply(rawExit, Deno, []) : apply(rawClose, globalThis, []);
  };
}
const hookedClose = closing("close");
for (const target of [globalThis, getProto(globalThis)]) {
  defineProperty(target, "close", { value: hookedClose, writable: false, configurable: false });
}
defineProperty(Deno, "exit", { value: closing("exit"), writable: false, configurable: false });

// Track JS timers so that code leaving callbacks behind taints the interpreter.
const liveTimers = new SetC();
globalThis.setTimeout = function (fn, ms, ...rest) {
  let id;
  const wrapped = typeof fn === "function"
    ? (...a) => { apply(setDelete, liveTimers, [id]); return apply(fn, undefined, a); } : fn;
  id = apply(rawSetTimeout, globalThis, [wrapped, ms, ...rest]);
  apply(setAdd, liveTimers, [id]);
  return id;
};
globalThis.clearTimeout = (id) => {
  apply(setDelete, liveTimers, [id]);
  return apply(rawClearTimeout, globalThis, [id]);
};
globalThis.setInterval = function (fn, ms, ...rest) {
  const id = apply(rawSetInterval, globalThis, [fn, ms, ...rest]);
  apply(setAdd, liveTimers, [id]);
  return id;
};
globalThis.clearInterval = (id) => {
  apply(setDelete, liveTimers, [id]);
  return apply(rawClearInterval, globalThis, [id]);
};

// ---- the JS realm: every intrinsic a run could patch is compared after the run ----------
function watchedObjects() {
  const seen = new SetC();
  const out = [];
  const add = (o) => {
    if ((typeof o === "object" && o !== null) || typeof o === "function") {
      if (!seen.has(o)) { seen.add(o); out.push(o); }
    }
  };
  for (let o = globalThis; o !== null; o = getProto(o)) add(o);
  const globals = ownKeys(globalThis);
  for (let i = 0; i < globals.length; i++) {
    const d = gOPD(globalThis, globals[i]);
    if (!d) continue;
    let v;
    try { v = "value" in d ? d.value : d.get ? apply(d.get, globalThis, []) : undefined; } catch (_e) { continue; }
    add(v);
    if (typeof v === "function") {
      const p = gOPD(v, "prototype");
      if (p && "value" in p) add(p.value);
      for (let q = getProto(v); q !== null; q = getProto(q)) add(q);
    }
  }
  // intrinsics without a global name
  const iter = [][Symbol.iterator]();
  add(getProto(iter)); add(getProto(getProto(iter)));
  add(getProto(new Map().entries())); add(getProto(new Set().values()));
  add(getProto(""[Symbol.iterator]())); add(getProto(/a/[Symbol.matchAll]("")));
  const gen = function* () {}, agen = async function* () {}, afn = async function () {};
  add(getProto(gen)); add(getProto(gen).prototype); add(getProto(gen.prototype));
  add(getProto(agen)); add(getProto(agen).prototype); add(getProto(agen.prototype));
  add(getProto(getProto(agen.prototype))); add(getProto(afn));
  add(TAProto); add(getProto(Uint8Array));
  for (const k of ownKeys(Deno)) {
    const d = gOPD(Deno, k);
    try { if (d) add("value" in d ? d.value : d.get ? apply(d.get, Deno, []) : undefined); } catch (_e) { /* ignore */ }
  }
  return out;
}

function fingerprint(objs) {
  const fp = [];
  for (let i = 0; i < objs.length; i++) {
    const o = objs[i];
    const keys = ownKeys(o);
    const vals = [];
    for (let j = 0; j < keys.length; j++) {
      const d = gOPD(o, keys[j]);
      vals[j] = d ? ("value" in d ? d.value : d.get) : undefined;
      vals[j + keys.length] = d && !("value" in d) ? d.set : undefined;
    }
    fp[i] = [keys, vals];
  }
  return fp;
}

function realmChanged(objs, base) {
  for (let i = 0; i < objs.length; i++) {
    const o = objs[i];
    const keys = base[i][0], vals = base[i][1];
    const now = ownKeys(o);
    if (now.length !== keys.length) return `JS object ${describe(o)}: properties added or removed`;
    for (let j = 0; j < keys.length; j++) {
      const d = gOPD(o, keys[j]);
      if (!d) return `JS ${describe(o)}.${StringC(keys[j])} removed`;
      const v = "value" in d ? d.value : d.get;
      const s = "value" in d ? undefined : d.set;
      if (!sameValue(v, vals[j]) || !sameValue(s, vals[j + keys.length])) {
        return `JS ${describe(o)}.${StringC(keys[j])} modified`;
      }
    }
  }
  return null;
}

function describe(o) {
  if (o === globalThis) return "globalThis";
  try {
    const c = gOPD(o, "constructor");
    if (c && typeof c.value === "function" && c.value.prototype === o) return `${c.value.name}.prototype`;
    const n = gOPD(o, "name");
    if (n && typeof n.value === "string") return n.value;
    const t = o[Symbol.toStringTag];
    if (typeof t === "string") return t;
  } catch (_e) { /* ignore */ }
  return "object";
}

// ---- output capture --------------------------------------------------------------------
class Sink {
  constructor() { this.buf = new U8(1 << 12); this.used = 0; }
  push(chunk, n) {
    if (this.used + n > apply(taLength, this.buf, [])) {
      let size = apply(taLength, this.buf, []) * 2;
      while (size < this.used + n) size *= 2;
      const bigger = new U8(size);
      apply(taSet, bigger, [apply(taSubarray, this.buf, [0, this.used]), 0]);
      this.buf = bigger;
    }
    apply(taSet, this.buf, [chunk, this.used]);
    this.used += n;
  }
  text() { return this.used ? apply(tdDecode, decoder, [apply(taSubarray, this.buf, [0, this.used])]) : ""; }
}

async function boot(init) {
  const t0 = now();
  port = init.port;
  const cfg = init.cfg;
  const ia = new Int32Array(init.sab);
  let out = null; // per run: {stdout: Sink, stderr: Sink, used, max, overflow}
  const makeSink = (name) => ({
    write(buf) {
      const n = apply(taLength, buf, []);
      if (!out) return n;
      const room = out.max - out.used;
      if (n > room) {
        if (room > 0) out[name].push(apply(taSubarray, buf, [0, room]), room);
        out.used = out.max;
        out.overflow = true;
        apply(atomicsStore, Atomics, [ia, 0, 2]); // stop the run: KeyboardInterrupt at next check
      } else {
        out[name].push(buf, n);
        out.used += n;
      }
      return n;
    },
  });
  const snapshot = await Deno.readFile(cfg.snapshotPath);
  const pyodide = await loadPyodide({ _loadSnapshot: snapshot, env: ENV });
  pyodide.setStdout(makeSink("stdout"));
  pyodide.setStderr(makeSink("stderr"));
  pyodide.setInterruptBuffer(ia);
  for (const whl of cfg.wheels || []) {
    pyodide.unpackArchive(await Deno.readFile(whl), "wheel");
  }
  const FS = pyodide.FS;
  const ns = pyodide.toPy({});
  pyodide.runPython(cfg.prelude, { globals: ns, filename: "<coze_runner>" });
  const pyRun = ns.get("run");
  const pyCleanup = ns.get("cleanup");
  const pyBaseline = ns.get("baseline");
  const pyPreload = ns.get("preload");
  // warm-up run, and materialise Deno's lazily defined globals, before taking the baselines
  pyBaseline();
  await pyRun("def main(args):\n    return {}", "{}", null, 1000, null);
  pyCleanup();
  let watched = null, baseRealm = null;
  const realmBaseline = () => {
    // Deno defines some globals lazily (a getter that replaces itself): read them first
    for (const target of [globalThis, Deno]) {
      const keys = ownKeys(target);
      for (let j = 0; j < keys.length; j++) { try { void target[keys[j]]; } catch (_e) { /* ignore */ } }
    }
    watched = watchedObjects();
    baseRealm = fingerprint(watched);
  };
  realmBaseline();
  pyBaseline();
  const loaded = new SetC(); // package files installed in this interpreter

  async function installPackages(packages) {
    const paths = [], imports = [];
    for (let i = 0; i < packages.length; i++) {
      if (loaded.has(packages[i].path)) continue;
      paths.push(packages[i].path);
      for (const m of packages[i].imports) imports.push(m);
    }
    if (!paths.length) return null;
    const errors = [];
    await pyodide.loadPackage(paths, {
      messageCallback: () => {},
      errorCallback: (m) => errors.push(StringC(m)),
      checkIntegrity: false,
    });
    for (const p of paths) loaded.add(p);
    const failed = pyPreload(JSON.stringify(imports));
    realmBaseline();
    return errors.length ? errors.join("; ") : (failed || null);
  }

  // workspace mounts: files copied in before the run, writable dirs copied out after it
  function mountIn(mounts) {
    const before = new MapC();
    for (const m of mounts) {
      const root = `${CWD}/${m.name}`;
      FS.mkdirTree(root);
      for (const f of m.files) {
        const path = `${root}/${f.path}`;
        const dir = path.slice(0, path.lastIndexOf("/"));
        FS.mkdirTree(dir);
        FS.writeFile(path, f.data);
        if (m.readOnly) FS.chmod(path, 0o444);
        else apply(mapSet, before, [path, f.data]);
      }
      if (m.readOnly) chmodTree(root, 0o555);
    }
    return before;
  }
  function chmodTree(path, mode) {
    const st = FS.lstat(path);
    if (!FS.isDir(st.mode)) return;
    for (const name of FS.readdir(path)) {
      if (name !== "." && name !== "..") chmodTree(`${path}/${name}`, mode);
    }
    FS.chmod(path, mode);
  }
  function mountOut(mounts, before, maxBytes, maxFiles) {
    const files = [];
    let bytes = 0;
    const walk = (dir, rel) => {
      let names;
      try { names = FS.readdir(dir); } catch (_e) { return; }
      names.sort();
      for (const name of names) {
        if (name === "." || name === "..") continue;
        const path = `${dir}/${name}`;
        const st = FS.lstat(path);
        if (FS.isDir(st.mode)) { walk(path, `${rel}/${name}`); continue; }
        if (!FS.isFile(st.mode)) continue; // symlinks and devices never leave the sandbox
        const data = FS.readFile(path);
        const old = apply(mapGet, before, [path]);
        if (old && equalBytes(old, data)) continue;
        bytes += data.length;
        files.push({ path: `${rel}/${name}`, data });
        if (files.length > maxFiles) throw new Error(`more than ${maxFiles} files written`);
        if (bytes > maxBytes) throw new Error(`more than ${maxBytes} bytes written`);
      }
    };
    for (const m of mounts) if (!m.readOnly) walk(`${CWD}/${m.name}`, m.name);
    return files;
  }
  function unmount(mounts) {
    for (const m of mounts) {
      const root = `${CWD}/${m.name}`;
      try { chmodTree(root, 0o755); removeTree(root); } catch (_e) { /* cleanup() reports it */ }
    }
  }
  function removeTree(path) {
    const st = FS.lstat(path);
    if (FS.isDir(st.mode)) {
      for (const name of FS.readdir(path)) {
        if (name !== "." && name !== "..") removeTree(`${path}/${name}`);
      }
      FS.rmdir(path);
    } else {
      FS.chmod(path, 0o644);
      FS.unlink(path);
    }
  }

  port.onmessage = async (ev) => {
    const job = ev.data;
    const t0 = now();
    let resText = null, err = null, files = [], mounted = null, prepMs = 0;
    const mounts = job.mounts || [];
    try {
      if (job.packages && job.packages.length) {
        const problem = await installPackages(job.packages);
        if (problem) err = { type: "package_unavailable", message: "installing packages failed: " + problem };
      }
      if (!err && mounts.length) mounted = mountIn(mounts);
    } catch (e) {
      err = { type: "worker_crashed", message: "preparing the run failed: " + StringC(e && e.message || e) };
    }
    prepMs = now() - t0;
    out = { stdout: new Sink(), stderr: new Sink(), used: 0, max: job.maxOutput, overflow: false };
    apply(setClear, liveTimers, []);
    const t1 = now();
    if (!err) {
      try {
        apply(atomicsStore, Atomics, [ia, 0, 0]);
        if (job.prepare) post({ type: "started", id: job.id });
        resText = StringC(await pyRun(job.code, job.params, job.entry ?? null, job.maxResult,
          job.unavailable ?? null));
      } catch (e) {
        const text = StringC(e && e.message || e);
        const fatal = /fatal/i.test(text);
        err = { type: fatal ? "worker_crashed" : "user_error", message: text.slice(-4000), fatal };
      }
    }
    apply(atomicsStore, Atomics, [ia, 0, 0]);
    if (out.overflow) {
      err = { type: "output_too_large", message: `stdout/stderr exceeded ${job.maxOutput} bytes` };
    }
    if (mounted && !err) {
      try {
        files = mountOut(mounts, mounted, job.mountMaxBytes, job.mountMaxFiles);
      } catch (e) {
        files = [];
        err = { type: "output_too_large", message: "workspace output: " + StringC(e && e.message || e) };
      }
    }
    if (mounts.length) unmount(mounts);
    const t2 = now();
    const stdout = out.stdout.text(), stderr = out.stderr.text();
    out = null;
    // reply first; undo the run's side effects before the next job is accepted
    const transfer = [];
    for (const f of files) transfer.push(f.data.buffer);
    post({ type: "result", id: job.id, resText, err, stdout, stderr, files,
      timing: { run_ms: t2 - t1, prepare_ms: prepMs } }, transfer);
    const t3 = now();
    let taint = err && err.fatal ? "fatal" : null;
    if (!taint) {
      try { taint = pyCleanup() ?? null; } catch (e) { taint = "cleanup failed: " + e; }
    }
    if (!taint && apply(setSize, liveTimers, [])) taint = `${apply(setSize, liveTimers, [])} JS timer(s) left running`;
    const t4 = now();
    if (!taint) taint = realmChanged(watched, baseRealm);
    post({ type: "idle", id: job.id, taint, cleanup_ms: now() - t3, realm_ms: now() - t4 });
  };
  post({ type: "ready", boot_ms: now() - t0 });
}

function equalBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
