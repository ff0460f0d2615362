// Control thread of one sandbox process. Connects to the Python pool over a unix socket
// (only this thread has permission to, and no code-node code ever runs in this realm), runs
// Python jobs in long-lived Pyodide workers and JavaScript jobs in a fresh worker per run.
// Isolation between owners: every Python interpreter is bound to the owner of its first run
// and never serves another owner; a new owner gets a fresh interpreter (a spare is kept
// booted) and the least recently used one is retired beyond cfg.maxInterpreters.
const sockPath = Deno.args[0];
const conn = await Deno.connect({ transport: "unix", path: sockPath });
const enc = new TextEncoder();
const dec = new TextDecoder();
let writing = Promise.resolve();
function send(obj, rawOutput) {
  let line = JSON.stringify(obj);
  if (rawOutput !== undefined) line = line.slice(0, -1) + ',"output":' + rawOutput + "}";
  const data = enc.encode(line + "\n");
  writing = writing.then(async () => {
    let off = 0;
    while (off < data.length) off += await conn.write(data.subarray(off));
  });
  return writing;
}

let cfg = null;
let perms = null;
// ---- Python interpreters ---------------------------------------------------------------
const interps = new Map(); // owner key -> interpreter (Map order = least recently used first)
let spare = null; // a booted (or booting) interpreter no code has run in yet
let restarts = 0;

function spawnPy() {
  const sab = new SharedArrayBuffer(4);
  const ia = new Int32Array(sab);
  const ch = new MessageChannel();
  const worker = new Worker(new URL("./py_worker.js", import.meta.url), {
    type: "module", deno: { permissions: perms },
  });
  const st = { worker, port: ch.port1, ia, runs: 0, dead: false, booted: false, owner: null,
    job: null, idle: null, idleResolve: null, loading: false };
  st.ready = new Promise((resolve, reject) => {
    worker.onmessage = (ev) => {
      if (ev.data && ev.data.type === "hello" && !st.hello) {
        st.hello = true;
        worker.postMessage({ cfg, sab, port: ch.port2 }, [ch.port2]);
      } else if (ev.data && ev.data.type === "boot_error" && !st.booted) {
        reject(new Error(ev.data.message));
      }
    };
    ch.port1.onmessage = (ev) => {
      const m = ev.data;
      if (!m || typeof m !== "object") return;
      if (m.type === "ready" && !st.booted) {
        st.booted = true;
        resolve(m.boot_ms);
        if (st === spare) sendStatus();
      } else if (m.type === "boot_error" && !st.booted) reject(new Error(m.message));
      else if (m.type === "started") onStarted(st, m);
      else if (m.type === "result") onResult(st, m);
      else if (m.type === "idle") onIdle(st, m);
      else if (m.type === "closing") died(st, "the code closed its interpreter (" + String(m.how) + ")", true);
    };
  });
  worker.onerror = (ev) => {
    ev.preventDefault();
    died(st, "worker error: " + ev.message);
  };
  st.ready.catch(() => {});
  return st;
}

function status() {
  return { warm: [...interps.keys()], spare: !!(spare && spare.booted) };
}
function sendStatus() { return send({ op: "status", ...status(), restarts }); }

function ensureSpare() {
  if (!spare && cfg) spare = spawnPy();
}

// Stop an interpreter and forget its owner binding.
function retire(st, reason, count = true) {
  if (st.dead) return;
  st.dead = true;
  try { st.worker.terminate(); } catch (_e) { /* gone */ }
  if (st.owner !== null && interps.get(st.owner) === st) interps.delete(st.owner);
  if (spare === st) spare = null;
  if (st.idleResolve) st.idleResolve();
  if (count) {
    restarts += 1;
    send({ op: "recycled", reason: String(reason).slice(0, 300), restarts });
  }
}

// The interpreter died (closed itself, crashed): fail its run at once. A crash replaces the
// whole process (V8 frees a dead worker's wasm memory lazily); a clean close only the worker.
function died(st, why, clean = false) {
  if (st.dead) return;
  const job = st.job;
  retire(st, why);
  if (job) {
    const reply = { op: "result", id: job.id, ok: false, stdout: "", stderr: "",
      error: { type: "worker_crashed", message: "the Python worker died: " + why } };
    if (!clean) reply.recycled = why;
    finish(st, job, reply);
  }
}

function finish(st, job, msg, raw) {
  if (st.job !== job) return;
  st.job = null;
  for (const t of job.timers) clearTimeout(t);
  job.resolve([msg, raw]);
}

function onStarted(st, m) {
  const job = st.job;
  if (!job || m.id !== job.id || job.started) return;
  job.started = true;
  for (const t of job.timers) clearTimeout(t);
  job.timers = [setTimeout(() => {
    Atomics.store(st.ia, 0, 2); // KeyboardInterrupt at the next bytecode boundary
    job.timers.push(setTimeout(() => {
      if (st.job !== job) return;
      retire(st, "timeout not interruptible");
      finish(st, job, { op: "result", id: job.id, ok: false, stdout: "", stderr: "",
        error: { type: "timeout", message: `execution exceeded ${job.timeoutMs / 1000} s (worker replaced)` },
        recycled: "timeout" });
    }, cfg.graceMs));
  }, job.timeoutMs)];
}

const OK_PREFIX = '{"ok":true,"output":';

function onResult(st, m) {
  const job = st.job;
  if (!job || m.id !== job.id) return;
  st.runs += 1;
  st.idle = new Promise((resolve) => { st.idleResolve = resolve; });
  // idle_wait: how long this run waited for the previous run's clean-up on this interpreter
  const timing = { ...m.timing, idle_wait_ms: st.idleWaitMs || 0,
    last_cleanup_ms: st.cleanupMs || 0, last_realm_check_ms: st.realmMs || 0 };
  const base = { op: "result", id: m.id, ok: false, stdout: String(m.stdout ?? ""),
    stderr: String(m.stderr ?? ""), error: null, timing };
  let raw;
  if (m.err) {
    base.error = { type: String(m.err.type), message: String(m.err.message) };
    if (m.err.fatal) { base.recycled = "fatal error"; retire(st, "fatal error"); }
  } else {
    // the interpreter's answer is data from a realm user code runs in: parse it here
    try {
      const text = String(m.resText);
      const r = JSON.parse(text);
      if (r && r.ok === true && text.startsWith(OK_PREFIX)) {
        raw = text.slice(OK_PREFIX.length, -1);
        if (raw.includes("\n")) raw = JSON.stringify(r.output);
        base.ok = true;
      } else if (r && r.ok === false && r.error) {
        base.error = { type: String(r.error.type), message: String(r.error.message) };
      } else throw new Error("malformed result");
    } catch (_e) {
      base.error = { type: "worker_crashed", message: "the Python worker sent a malformed result" };
      retire(st, "malformed result");
    }
  }
  if (base.ok && Array.isArray(m.files) && m.files.length) {
    base.files = m.files.map((f) => ({ path: String(f.path), b64: new Uint8Array(f.data).toBase64() }));
  }
  finish(st, job, base, raw);
}

// The worker reports after undoing the run's side effects; a tainted one is replaced.
function onIdle(st, m) {
  if (st.dead) return;
  st.cleanupMs = Number(m.cleanup_ms) || 0;
  st.realmMs = Number(m.realm_ms) || 0;
  let taint = m.taint;
  if (!taint && cfg.maxRunsPerWorker > 0 && st.runs >= cfg.maxRunsPerWorker) taint = "max runs";
  if (taint) retire(st, taint);
  const resolve = st.idleResolve;
  st.idle = null;
  st.idleResolve = null;
  if (resolve) resolve();
}

// The interpreter of `owner`: its own warm one, else the spare (bound to it from now on).
async function interpreterFor(owner) {
  let lastError = null;
  for (let attempt = 0; attempt < 4; attempt++) {
    let st = interps.get(owner);
    if (st && !st.dead) {
      interps.delete(owner);
      interps.set(owner, st); // most recently used
      if (st.idle) {
        const t0 = performance.now();
        await st.idle;
        st.idleWaitMs = performance.now() - t0;
      } else st.idleWaitMs = 0;
      if (st.dead || interps.get(owner) !== st) continue;
      return st;
    }
    ensureSpare();
    st = spare;
    spare = null;
    st.owner = owner;
    interps.set(owner, st);
    for (const [key, other] of interps) {
      if (interps.size <= cfg.maxInterpreters) break;
      if (key !== owner && !other.job) retire(other, "evicted (least recently used)", false);
    }
    try {
      await st.ready;
    } catch (e) {
      lastError = e;
      retire(st, "boot failed");
      continue;
    }
    if (st.dead) continue;
    return st;
  }
  throw lastError || new Error("no interpreter could be started");
}

async function runPython(job) {
  let st;
  try {
    st = await interpreterFor(job.owner);
  } catch (e) {
    return [{ op: "result", id: job.id, ok: false, stdout: "", stderr: "",
      error: { type: "worker_crashed", message: "Python worker failed to start: " + e.message } }];
  }
  const mounts = (job.mounts || []).map((m) => ({
    name: m.name, readOnly: !!m.read_only,
    files: m.files.map((f) => ({ path: f.path, data: Uint8Array.fromBase64(f.b64) })),
  }));
  const transfer = [];
  for (const m of mounts) for (const f of m.files) transfer.push(f.data.buffer);
  return await new Promise((resolve) => {
    const entry = { id: job.id, timers: [], resolve, started: false, timeoutMs: job.timeoutMs };
    const prepare = !!(mounts.length || (job.packages && job.packages.length));
    st.job = entry;
    Atomics.store(st.ia, 0, 0);
    st.port.postMessage({ id: job.id, code: job.code, params: job.params, entry: job.entry,
      maxOutput: job.maxOutput, maxResult: job.maxResult, unavailable: job.unavailable ?? null,
      packages: job.packages || [], mounts, mountMaxBytes: cfg.mountMaxBytes,
      mountMaxFiles: cfg.mountMaxFiles, prepare }, transfer);
    if (!prepare) {
      onStarted(st, { id: job.id });
      return;
    }
    // preparing (packages, mounts) has its own limit; the run's clock starts at "started"
    entry.timers.push(setTimeout(() => {
      if (st.job !== entry || entry.started) return;
      retire(st, "preparing the run took too long");
      finish(st, entry, { op: "result", id: job.id, ok: false, stdout: "", stderr: "",
        error: { type: "timeout", message: "installing packages / mounting files took too long" },
        recycled: "prepare timeout" });
    }, cfg.prepareTimeoutMs));
  });
}

// ---- JavaScript workers (one per run, a spare is kept warm) ---------------------------
function spawnJs() {
  const worker = new Worker(new URL("./js_worker.js", import.meta.url), {
    type: "module", deno: { permissions: perms },
  });
  const ready = new Promise((resolve) => {
    worker.onmessage = (ev) => { if (ev.data && ev.data.type === "hello") resolve(); };
  });
  return { worker, ready };
}
let jsSpare = null;

async function runJs(job) {
  const js = jsSpare || spawnJs();
  jsSpare = null;
  await js.ready;
  const result = await new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ timeout: true }), job.timeoutMs);
    js.worker.onmessage = (ev) => {
      const m = ev.data;
      if (m && m.type === "result" && m.id === job.id) { clearTimeout(timer); resolve(m); }
      else if (m && m.type === "closing") { clearTimeout(timer); resolve({ crashed: "the code closed its worker (" + String(m.how) + ")" }); }
    };
    js.worker.onerror = (ev) => { ev.preventDefault(); clearTimeout(timer); resolve({ crashed: ev.message }); };
    js.worker.postMessage(job);
  });
  js.worker.terminate();
  jsSpare = spawnJs();
  if (result.timeout) {
    return [{ op: "result", id: job.id, ok: false, stdout: "", stderr: "",
      error: { type: "timeout", message: `execution exceeded ${job.timeoutMs / 1000} s` } }];
  }
  if (result.crashed) {
    return [{ op: "result", id: job.id, ok: false, stdout: "", stderr: "",
      error: { type: "worker_crashed", message: "the JavaScript worker died: " + result.crashed } }];
  }
  const r = result.res;
  const base = { op: "result", id: job.id, ok: !!r.ok, stdout: result.stdout, stderr: result.stderr,
    error: r.ok ? null : r.error };
  return r.ok ? [base, r.outputText] : [base];
}

// ---- protocol ----------------------------------------------------------------------
let queue = Promise.resolve();
async function handle(msg) {
  if (msg.op === "init") {
    cfg = msg.cfg;
    perms = cfg.permissions;
    spare = spawnPy();
    jsSpare = spawnJs();
    try {
      const bootMs = await spare.ready;
      await send({ op: "ready", boot_ms: bootMs, ...status() });
    } catch (e) {
      await send({ op: "boot_error", message: String(e.message || e) });
    }
  } else if (msg.op === "run") {
    const t0 = performance.now();
    const [reply, raw] = msg.lang === "javascript" ? await runJs(msg) : await runPython(msg);
    reply.restarts = restarts;
    reply.timing = { ...(reply.timing || {}), host_ms: performance.now() - t0 };
    Object.assign(reply, status());
    await send(reply, raw);
    // a new spare boots after the reply, so it does not compete with the run it replaces
    if (!spare) setTimeout(ensureSpare, 0);
  } else if (msg.op === "ping") {
    await send({ op: "pong", restarts, ...status() });
  }
}

let pending = "";
const buf = new Uint8Array(1 << 16);
while (true) {
  const n = await conn.read(buf);
  if (n === null) break;
  pending += dec.decode(buf.subarray(0, n), { stream: true });
  let nl;
  while ((nl = pending.indexOf("\n")) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    queue = queue.then(() => handle(msg)).catch((e) => send({ op: "log", message: String(e) }));
  }
}
Deno.exit(0);
