// JavaScript code-node worker: used for exactly one run, then terminated by host.js.
const realPost = self.postMessage.bind(self);
let used = false;

// Code that closes its worker (Deno.exit(), self.close(), process.exit()) says so first,
// so the run fails at once with worker_crashed instead of waiting for its time limit.
const rawClose = self.close.bind(self), rawExit = Deno.exit;
const closing = (how, raw) => function () { realPost({ type: "closing", how }); return raw(); };
for (const target of [self, Object.getPrototypeOf(self)]) {
  Object.defineProperty(target, "close", { value: closing("self.close()", rawClose), writable: false, configurable: false });
}
Object.defineProperty(Deno, "exit", { value: closing("Deno.exit()", rawExit), writable: false, configurable: false });

self.onmessage = async (ev) => {
  if (used) return;
  used = true;
  const job = ev.data;
  const enc = new TextEncoder();
  const buf = { stdout: [], stderr: [], used: 0, overflow: false };
  const sink = (name) => (...args) => {
    if (buf.overflow) throw new Error("output limit exceeded");
    const line = args.map((a) => typeof a === "string" ? a : Deno.inspect(a)).join(" ") + "\n";
    const n = enc.encode(line).length;
    if (buf.used + n > job.maxOutput) {
      buf.overflow = true;
      throw new Error("output limit exceeded"); // stops a print loop
    }
    buf.used += n;
    buf[name].push(line);
  };
  console.log = console.info = console.debug = sink("stdout");
  console.error = console.warn = sink("stderr");
  let res;
  try {
    const params = JSON.parse(job.params);
    const name = job.entry || "main";
    if (!/^[A-Za-z_$][\w$]*$/.test(name)) throw new Error(`invalid entry name ${name}`);
    const fn = new Function(`${job.code}\n;return typeof ${name} === "function" ? ${name} : undefined;`)();
    if (typeof fn !== "function") {
      res = { ok: false, error: { type: "user_error", message: `the code does not define a function '${name}'` } };
    } else {
      const out = await (job.entry ? fn(params) : fn({ params }));
      if (out === null || typeof out !== "object" || Array.isArray(out)) {
        res = { ok: false, error: { type: "invalid_result", message: `${name}() must return an object, got ${out === null ? "null" : Array.isArray(out) ? "array" : typeof out}` } };
      } else {
        let text;
        try { text = JSON.stringify(out); } catch (e) {
          res = { ok: false, error: { type: "invalid_result", message: `${name}() returned a value that is not JSON: ${e}` } };
        }
        if (!res && text.length > job.maxResult) {
          res = { ok: false, error: { type: "output_too_large", message: `result is ${text.length} bytes, limit ${job.maxResult}` } };
        } else if (!res) {
          res = { ok: true, outputText: text };
        }
      }
    }
  } catch (err) {
    const msg = err && err.stack ? String(err.stack) : String(err);
    res = { ok: false, error: { type: "user_error", message: msg.split("\n").slice(0, 12).join("\n") } };
  }
  if (buf.overflow) res = { ok: false, error: { type: "output_too_large", message: `console output exceeded ${job.maxOutput} bytes` } };
  realPost({ type: "result", id: job.id, res, stdout: buf.stdout.join(""), stderr: buf.stderr.join("") });
};
realPost({ type: "hello" });
