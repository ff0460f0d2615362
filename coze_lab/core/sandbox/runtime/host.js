// Control thread of one sandbox process. Connects to the Python pool over a unix socket
// (only this thread has permission to), runs Python jobs in a long-lived Pyodide worker and
// JavaScript jobs in a fresh worker per run. Workers get only the configured permissions.
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
// ---- Python worker -------------------------------------------------------------------
let py = null; // {worker, port, ia, ready: Promise, runs}
let pyJob = null; // {id, timers:[], resolve}
let restarts = 0;

function spawnPy() {
  const sab = new SharedArrayBuffer(4);
  const ia = new Int32Array(sab);
  const ch = new MessageChannel();
  const worker = new Worker(new URL("./py_worker.js", import.meta.url), {
    type: "module", deno: { permissions: perms },
  });
  const state = { worker, port: ch.port1, ia, runs: 0, dead: false };
  state.ready = new Promise((resolve, reject) => {
    worker.onmessage = (ev) => {
      if (ev.data && ev.data.type === "hello" && !state.hello) {
        state.hello = true;
        worker.postMessage({ cfg, sab, port: ch.port2 }, [ch.port2]);
      } else if (ev.data && ev.data.type === "boot_error" && !state.booted) {
        reject(new Error(ev.data.message));
      }
    };
    ch.port1.onmessage = (ev) => {
      const m = ev.data;
      if (m.type === "ready") { state.booted = true; resolve(m.boot_ms); }
      else if (m.type === "boot_error") reject(new Error(m.message));
      else if (m.type === "result") onPyResult(state, m);
      else if (m.type === "idle") onPyIdle(state, m);
      else if (m.type === "closing") pyDied(state, "the interpreter closed itself");
    };
  });
  worker.onerror = (ev) => {
    ev.preventDefault();
    pyDied(state, "worker error: " + ev.message);
  };
  state.ready.catch(() => {});
  return state;
}

function finishPy(msg, raw) {
  const job = pyJob;
  if (!job) return;
  pyJob = null;
  for (const t of job.timers) clearTimeout(t);
  job.resolve([msg, raw]);
}

function recyclePy(reason) {
  const old = py;
  if (old) { old.dead = true; try { old.worker.terminate(); } catch (_e) { /* gone */ } }
  restarts += 1;
  if (old) send({ op: "recycled", reason: String(reason).slice(0, 300), restarts });
  py = spawnPy();
  py.reason = reason;
}

function pyDied(state, why) {
  if (state.dead || state !== py) return;
  const job = pyJob;
  recyclePy(why);
  if (job) {
    finishPy({ op: "result", id: job.id, ok: false, stdout: "", stderr: "",
      error: { type: "worker_crashed", message: "the Python worker died: " + why }, recycled: why });
  }
}

function onPyResult(state, m) {
  if (state !== py || !pyJob || m.id !== pyJob.id) return;
  state.runs += 1;
  state.idle = new Promise((resolve) => { state.idleResolve = resolve; });
  const r = m.res;
  const base = { op: "result", id: m.id, ok: !!r.ok, stdout: m.stdout, stderr: m.stderr,
    error: r.ok ? null : r.error, timing: m.timing };
  if (r.fatal) { base.recycled = "fatal error"; pyDiedAfter(state, "fatal error"); }
  if (r.ok) finishPy(base, JSON.stringify(r.output));
  else finishPy(base);
}

// The worker reports after undoing the run's side effects; a tainted one is replaced.
function onPyIdle(state, m) {
  if (state !== py) return;
  let taint = m.taint;
  if (!taint && cfg.maxRunsPerWorker > 0 && state.runs >= cfg.maxRunsPerWorker) taint = "max runs";
  if (taint) recyclePy(taint);
  if (state.idleResolve) state.idleResolve();
}

function pyDiedAfter(state, why) {
  if (state !== py) return;
  recyclePy(why);
}

async function runPython(job) {
  let bootError = null;
  if (py.idle) await py.idle;
  for (let attempt = 0; attempt < 2; attempt++) {
    try { await py.ready; bootError = null; break; } catch (e) { bootError = e; recyclePy("boot failed"); }
  }
  if (bootError) return [{ op: "result", id: job.id, ok: false, stdout: "", stderr: "",
    error: { type: "worker_crashed", message: "Python worker failed to start: " + bootError.message } }];
  const state = py;
  state.idle = null;
  return await new Promise((resolve) => {
    pyJob = { id: job.id, timers: [], resolve };
    Atomics.store(state.ia, 0, 0);
    state.port.postMessage({ id: job.id, code: job.code, params: job.params, entry: job.entry,
      maxOutput: job.maxOutput, maxResult: job.maxResult });
    pyJob.timers.push(setTimeout(() => {
      Atomics.store(state.ia, 0, 2); // KeyboardInterrupt at the next bytecode boundary
      if (pyJob) pyJob.timers.push(setTimeout(() => {
        if (!pyJob || pyJob.id !== job.id) return;
        recyclePy("timeout not interruptible");
        finishPy({ op: "result", id: job.id, ok: false, stdout: "", stderr: "",
          error: { type: "timeout", message: `execution exceeded ${job.timeoutMs / 1000} s (worker replaced)` },
          recycled: "timeout" });
      }, cfg.graceMs));
    }, job.timeoutMs));
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
      if (ev.data && ev.data.type === "result" && ev.data.id === job.id) { clearTimeout(timer); resolve(ev.data); }
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
    py = spawnPy();
    jsSpare = spawnJs();
    try {
      const bootMs = await py.ready;
      await send({ op: "ready", boot_ms: bootMs });
    } catch (e) {
      await send({ op: "boot_error", message: String(e.message || e) });
    }
  } else if (msg.op === "run") {
    const t0 = performance.now();
    const [reply, raw] = msg.lang === "javascript" ? await runJs(msg) : await runPython(msg);
    reply.restarts = restarts;
    reply.timing = { ...(reply.timing || {}), host_ms: performance.now() - t0 };
    await send(reply, raw);
  } else if (msg.op === "ping") {
    await send({ op: "pong", restarts });
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
