// Pyodide worker: one long-lived Python interpreter, restored from a memory snapshot.
// It talks only to the control thread (host.js) over a private MessagePort; the code it
// runs never sees that port. Deno permissions of this worker are set by host.js.
import { loadPyodide } from "npm:pyodide@__PYODIDE_VERSION__";

const realPost = self.postMessage.bind(self);
let port = null;
let booted = false;

self.onmessage = (ev) => {
  if (booted) return; // only the first (init) message is trusted
  booted = true;
  boot(ev.data).catch((err) => {
    const msg = { type: "boot_error", message: String(err && err.stack || err) };
    if (port) port.postMessage(msg); else realPost(msg);
  });
};
realPost({ type: "hello" });
// A worker that closes itself says so first, so the run fails fast with a clear error.
const rawClose = self.close.bind(self);
const closeHook = () => { if (port) port.postMessage({ type: "closing" }); rawClose(); };
self.close = closeHook;
Object.getPrototypeOf(self).close = closeHook;

// Track JS timers so that code leaving callbacks behind taints the worker.
const liveTimers = new Set();
const rawSetTimeout = globalThis.setTimeout, rawClearTimeout = globalThis.clearTimeout;
const rawSetInterval = globalThis.setInterval, rawClearInterval = globalThis.clearInterval;
globalThis.setTimeout = function (fn, ms, ...rest) {
  let id;
  const wrapped = typeof fn === "function"
    ? (...a) => { liveTimers.delete(id); return fn(...a); } : fn;
  id = rawSetTimeout(wrapped, ms, ...rest);
  liveTimers.add(id);
  return id;
};
globalThis.clearTimeout = (id) => { liveTimers.delete(id); return rawClearTimeout(id); };
globalThis.setInterval = function (fn, ms, ...rest) {
  const id = rawSetInterval(fn, ms, ...rest);
  liveTimers.add(id);
  return id;
};
globalThis.clearInterval = (id) => { liveTimers.delete(id); return rawClearInterval(id); };

const WATCHED = () => [globalThis, Object.prototype, Array.prototype, Function.prototype,
  String.prototype, Promise.prototype, console, JSON, Math, Reflect, Deno];
function realmFingerprint() {
  // Deno hands npm code (Pyodide) and plain code different global objects and redefines
  // some lazily, so keys are compared as sets and only non-function data values by identity.
  return WATCHED().map((obj) => {
    const m = new Map();
    for (const k of Reflect.ownKeys(obj)) {
      const d = Object.getOwnPropertyDescriptor(obj, k);
      const v = d && "value" in d ? d.value : undefined;
      m.set(k, !d || !("value" in d) || typeof v === "function" ? "fn" : v);
    }
    return m;
  });
}
function fingerprintDiff(a, b) {
  const names = ["globalThis", "Object.prototype", "Array.prototype", "Function.prototype",
    "String.prototype", "Promise.prototype", "console", "JSON", "Math", "Reflect", "Deno"];
  for (let i = 0; i < a.length; i++) {
    if (a[i].size !== b[i].size) return `JS ${names[i]} properties added/removed`;
    for (const [k, v] of a[i]) {
      if (!b[i].has(k) || !Object.is(b[i].get(k), v)) return `JS ${names[i]}.${String(k)} modified`;
    }
  }
  return null;
}

async function boot(init) {
  const t0 = performance.now();
  port = init.port;
  const cfg = init.cfg;
  const ia = new Int32Array(init.sab);
  // output capture (per run)
  let out = null;
  const makeSink = (name) => ({
    write(buf) {
      if (!out) return buf.length;
      const room = out.max - out.used;
      if (buf.length > room) {
        if (room > 0) out[name].push(buf.slice(0, room));
        out.used = out.max;
        out.overflow = true;
        Atomics.store(ia, 0, 2); // stop the run quickly: KeyboardInterrupt at next check
      } else {
        out[name].push(buf.slice());
        out.used += buf.length;
      }
      return buf.length;
    },
  });
  const snapshot = await Deno.readFile(cfg.snapshotPath);
  const opts = { _loadSnapshot: snapshot, env: { HOME: "/home/pyodide" } };
  if (cfg.packageIndexUrl) opts.packageBaseUrl = cfg.packageIndexUrl;
  const pyodide = await loadPyodide(opts);
  pyodide.setStdout(makeSink("stdout"));
  pyodide.setStderr(makeSink("stderr"));
  pyodide.setInterruptBuffer(ia);
  for (const whl of cfg.wheels || []) {
    const data = await Deno.readFile(whl);
    pyodide.unpackArchive(data, "wheel");
  }
  const ns = pyodide.toPy({});
  pyodide.runPython(cfg.prelude, { globals: ns, filename: "<coze_runner>" });
  const pyRun = ns.get("run");
  const pyCleanup = ns.get("cleanup");
  const pyBaseline = ns.get("baseline");
  // warm-up run, and materialise Deno's lazily defined globals, before taking the baselines
  pyBaseline();
  await pyRun("def main(args):\n    return {}", "{}", null, 1000);
  pyCleanup();
  for (const obj of WATCHED()) {
    for (const k of Reflect.ownKeys(obj)) { try { void obj[k]; } catch (_e) { /* ignore */ } }
  }
  pyBaseline();
  const baseRealm = realmFingerprint();
  const dec = new TextDecoder();
  const join = (chunks) => {
    let n = 0; for (const c of chunks) n += c.length;
    const all = new Uint8Array(n); let o = 0;
    for (const c of chunks) { all.set(c, o); o += c.length; }
    return dec.decode(all);
  };

  port.onmessage = async (ev) => {
    const job = ev.data;
    out = { stdout: [], stderr: [], used: 0, max: job.maxOutput, overflow: false };
    liveTimers.clear();
    const t0 = performance.now();
    let res;
    try {
      if (cfg.packageIndexUrl) {
        try { await pyodide.loadPackagesFromImports(job.code); } catch (_e) { /* reported on import */ }
      }
      Atomics.store(ia, 0, 0);
      res = JSON.parse(await pyRun(job.code, job.params, job.entry ?? null, job.maxResult));
    } catch (err) {
      const text = String(err && err.message || err);
      const fatal = /fatal/i.test(text);
      res = { ok: false, fatal, error: { type: fatal ? "worker_crashed" : "user_error", message: text.slice(-4000) } };
    }
    Atomics.store(ia, 0, 0);
    if (out.overflow) {
      res = { ok: false, error: { type: "output_too_large",
        message: `stdout/stderr exceeded ${job.maxOutput} bytes` } };
    }
    const t1 = performance.now();
    const stdout = join(out.stdout), stderr = join(out.stderr);
    out = null;
    // reply first; undo the run's side effects before the next job is accepted
    port.postMessage({ type: "result", id: job.id, res, stdout, stderr,
      timing: { run_ms: t1 - t0 } });
    let taint = res.fatal ? "fatal" : null;
    if (!taint) {
      try { taint = pyCleanup() ?? null; } catch (err) { taint = "cleanup failed: " + err; }
    }
    if (!taint && liveTimers.size) taint = `${liveTimers.size} JS timer(s) left running`;
    if (!taint) taint = fingerprintDiff(baseRealm, realmFingerprint());
    port.postMessage({ type: "idle", id: job.id, taint, cleanup_ms: performance.now() - t1 });
  };
  port.postMessage({ type: "ready", boot_ms: performance.now() - t0 });
}
