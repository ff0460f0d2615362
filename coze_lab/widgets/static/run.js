// coze_lab workflow-run widget (anywidget ESM). State comes from the kernel as traits;
// answers go back as custom messages, or straight to the Jupyter server when the page
// is served by the same server the kernel talks to.

const STATUS_LABEL = {
  pending: "waiting",
  running: "running",
  succeeded: "done",
  failed: "failed",
  skipped: "skipped",
  interrupted: "needs you",
  canceled: "canceled",
  not_run: "not run",
  connecting: "connecting",
};

/** A latency for a node box: "<1 ms", "4.2 ms", "63 ms", "1.4 s", "95 s". */
export function formatMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(Number(ms))) return "";
  const v = Number(ms);
  if (v < 1) return "<1 ms";
  if (v < 10) return `${v.toFixed(1)} ms`;
  if (v < 1000) return `${Math.round(v)} ms`;
  return v < 10000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v / 1000)} s`;
}

/** The run's error as a headline naming the node once, and the detail (e.g. a traceback). */
export function describeError(error, nodes) {
  if (!error) return null;
  const msg = String(error.msg || error.message || JSON.stringify(error));
  const id = error.node_id;
  if (!id) return { headline: "Run failed", detail: msg };
  const node = (nodes || []).find((n) => n.id === id);
  const name = node && node.title && node.title !== id ? `${node.title} (${id})` : id;
  // the engine's message already starts with "node 'id' failed: "; say it once
  const prefix = `node '${id}' failed`;
  let detail = msg;
  if (detail.startsWith(prefix)) detail = detail.slice(prefix.length).replace(/^:?\s*/, "");
  return { headline: `Node ${name} failed`, detail };
}

let clipSeq = 0;

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function pageBaseUrl() {
  try {
    const node = document.getElementById("jupyter-config-data");
    return node ? JSON.parse(node.textContent || "{}").baseUrl || null : null;
  } catch {
    return null;
  }
}

function xsrf() {
  const match = document.cookie.match("\\b_xsrf=([^;]*)\\b");
  return match ? decodeURIComponent(match[1]) : "";
}

/** Post an answer from the page itself; false when the page cannot reach the server. */
async function resumeDirect(base, eventId, data) {
  const page = pageBaseUrl();
  if (!base || !page || page !== base) return false;
  try {
    const response = await fetch(`${base}coze_lab/api/interrupts/${eventId}/resume`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-XSRFToken": xsrf() },
      body: JSON.stringify({ data }),
    });
    const body = await response.json().catch(() => null);
    if (body && body.code !== 0) return { error: body.msg || `error ${body.code}` };
    return response.ok;
  } catch {
    return false;
  }
}

function ranks(nodes, edges) {
  const incoming = new Map(nodes.map((n) => [n.id, []]));
  for (const e of edges) if (incoming.has(e.target)) incoming.get(e.target).push(e.source);
  const rank = new Map();
  const visit = (id, seen = new Set()) => {
    if (rank.has(id)) return rank.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const parents = incoming.get(id) || [];
    const r = parents.length ? 1 + Math.max(...parents.map((p) => visit(p, seen))) : 0;
    rank.set(id, r);
    return r;
  };
  nodes.forEach((n) => visit(n.id));
  return rank;
}

const W = 156;
const H = 46;
const GX = 36;
const GY = 14;

function renderGraph(model) {
  const nodes = model.get("nodes") || [];
  const edges = model.get("edges") || [];
  const wrap = h("div", { class: "coze-run-graph", dataset: { testid: "coze-run-graph" } });
  if (!nodes.length) return wrap;
  const rank = ranks(nodes, edges);
  const columns = new Map();
  for (const n of nodes) {
    const r = rank.get(n.id) || 0;
    if (!columns.has(r)) columns.set(r, []);
    columns.get(r).push(n);
  }
  const pos = new Map();
  let height = 0;
  for (const [r, col] of columns) {
    col.forEach((n, i) => pos.set(n.id, { x: 8 + r * (W + GX), y: 8 + i * (H + GY) }));
    height = Math.max(height, col.length * (H + GY));
  }
  const width = 16 + columns.size * (W + GX) - GX;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height + 8));
  svg.setAttribute("class", "coze-run-svg");
  for (const e of edges) {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) continue;
    const path = document.createElementNS(ns, "path");
    const x1 = a.x + W;
    const y1 = a.y + H / 2;
    const x2 = b.x;
    const y2 = b.y + H / 2;
    const mx = (x1 + x2) / 2;
    path.setAttribute("d", `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`);
    path.setAttribute("class", "coze-run-edge");
    svg.append(path);
    if (e.port) {
      const label = document.createElementNS(ns, "text");
      label.setAttribute("x", String(mx));
      label.setAttribute("y", String((y1 + y2) / 2 - 3));
      label.setAttribute("class", "coze-run-port");
      label.textContent = e.port;
      svg.append(label);
    }
  }
  for (const n of nodes) {
    const p = pos.get(n.id);
    const g = document.createElementNS(ns, "g");
    g.setAttribute("class", `coze-run-node coze-status-${n.status}`);
    g.setAttribute("data-node", n.id);
    g.setAttribute("data-status", n.status);
    const rect = document.createElementNS(ns, "rect");
    Object.entries({ x: p.x, y: p.y, width: W, height: H, rx: 7 }).forEach(([k, v]) =>
      rect.setAttribute(k, String(v))
    );
    // nothing drawn in a node leaves its box
    const clipId = `coze-run-clip-${++clipSeq}`;
    const clip = document.createElementNS(ns, "clipPath");
    clip.setAttribute("id", clipId);
    const clipRect = document.createElementNS(ns, "rect");
    Object.entries({ x: p.x + 4, y: p.y, width: W - 8, height: H }).forEach(([k, v]) =>
      clipRect.setAttribute(k, String(v))
    );
    clip.append(clipRect);
    const texts = document.createElementNS(ns, "g");
    texts.setAttribute("clip-path", `url(#${clipId})`);
    const latency = formatMs(n.latency_ms);
    const room = latency ? 14 : 20; // characters of the title beside the latency
    const title = document.createElementNS(ns, "text");
    title.setAttribute("x", String(p.x + 8));
    title.setAttribute("y", String(p.y + 18));
    title.setAttribute("class", "coze-run-title");
    title.textContent = n.title.length > room ? n.title.slice(0, room - 1) + "…" : n.title;
    const sub = document.createElementNS(ns, "text");
    sub.setAttribute("x", String(p.x + 8));
    sub.setAttribute("y", String(p.y + 36));
    sub.setAttribute("class", "coze-run-sub");
    sub.textContent = `${n.type || ""} · ${STATUS_LABEL[n.status] || n.status}`;
    texts.append(title, sub);
    if (latency) {
      const time = document.createElementNS(ns, "text");
      time.setAttribute("x", String(p.x + W - 8));
      time.setAttribute("y", String(p.y + 18));
      time.setAttribute("class", "coze-run-latency");
      time.setAttribute("data-testid", "coze-run-latency");
      time.textContent = latency;
      texts.append(time);
    }
    const tip = document.createElementNS(ns, "title");
    const took = latency ? `, ${latency}` : "";
    tip.textContent = n.error ? `${n.id}: ${n.error}` : `${n.id} (${n.status}${took})`;
    g.append(clip, rect, texts, tip);
    svg.append(g);
  }
  wrap.append(svg);
  return wrap;
}

function questionForm(model, item, onAnswer) {
  const data = item.data || {};
  const box = h("div", {
    class: "coze-form",
    dataset: { testid: "coze-run-question", eventId: item.event_id },
  });
  const status = h("div", { class: "coze-form-status" });
  const submit = async (value, buttons) => {
    buttons.forEach((b) => (b.disabled = true));
    status.textContent = "sending…";
    const error = await onAnswer(item.event_id, value);
    if (error) {
      status.textContent = error;
      buttons.forEach((b) => (b.disabled = false));
    } else {
      status.textContent = "answered";
    }
  };
  box.append(h("div", { class: "coze-form-node" }, `Waiting at ${item.node_title || item.node_id}`));
  if (item.type === "input") {
    if (data.prompt) box.append(h("div", { class: "coze-form-question" }, data.prompt));
    const fields = (data.form && data.form.fields) || [];
    const inputs = fields.map((f) => {
      const type = f.type || "string";
      const input =
        type === "boolean"
          ? h("input", { type: "checkbox", name: f.name })
          : h("input", {
              type: type === "string" ? "text" : "number",
              step: type === "integer" ? "1" : "any",
              name: f.name,
              placeholder: f.description || f.name,
            });
      box.append(
        h("label", { class: "coze-form-field" }, h("span", {}, f.name + (f.required === false ? "" : " *")), input)
      );
      return [f, input];
    });
    const button = h("button", { class: "coze-button coze-primary", type: "button" }, "Submit");
    button.addEventListener("click", () => {
      const value = {};
      for (const [f, input] of inputs) {
        const type = f.type || "string";
        if (type === "boolean") value[f.name] = input.checked;
        else if (input.value === "") value[f.name] = null;
        else if (type === "integer") value[f.name] = parseInt(input.value, 10);
        else if (type === "number") value[f.name] = parseFloat(input.value);
        else value[f.name] = input.value;
      }
      submit(value, [button]);
    });
    box.append(button);
  } else {
    box.append(h("div", { class: "coze-form-question" }, data.question || "(question)"));
    if (Array.isArray(data.choices) && data.choices.length) {
      const buttons = data.choices.map((c) =>
        h("button", { class: "coze-button", type: "button", dataset: { choice: c } }, c)
      );
      buttons.forEach((b) => b.addEventListener("click", () => submit(b.dataset.choice, buttons)));
      box.append(h("div", { class: "coze-choices" }, buttons));
    } else {
      const text = h("textarea", { rows: "2", placeholder: "Your answer" });
      const button = h("button", { class: "coze-button coze-primary", type: "button" }, "Answer");
      button.addEventListener("click", () => {
        if (text.value.trim()) submit(text.value, [button]);
      });
      box.append(text, button);
    }
  }
  box.append(status);
  return box;
}

function render({ model, el }) {
  el.classList.add("coze-widget", "coze-run");
  const header = h("div", { class: "coze-run-header" });
  const notice = h("div", { class: "coze-notice" });
  const graph = h("div");
  const messages = h("div", { class: "coze-run-messages" });
  const forms = h("div", { class: "coze-run-forms" });
  const result = h("div", { class: "coze-run-result" });
  el.append(header, notice, graph, messages, forms, result);
  const waiting = new Map(); // event_id -> resolve(error|null) for kernel answers

  model.on("msg:custom", (msg) => {
    if (msg && msg.type === "error" && waiting.has(String(msg.event_id))) {
      waiting.get(String(msg.event_id))(msg.msg || "error");
      waiting.delete(String(msg.event_id));
    }
  });

  const answer = async (eventId, data) => {
    const direct = await resumeDirect(model.get("page_base"), eventId, data);
    if (direct && direct.error) return direct.error;
    if (direct === true) {
      model.send({ type: "poke" });
      return null;
    }
    return new Promise((resolve) => {
      waiting.set(String(eventId), resolve);
      model.send({ type: "resume", event_id: eventId, data });
      setTimeout(() => {
        if (waiting.has(String(eventId))) {
          waiting.delete(String(eventId));
          resolve(null);
        }
      }, 4000);
    });
  };

  const drawHeader = () => {
    const status = model.get("status");
    const cancel = ["running", "interrupted"].includes(status)
      ? h(
          "button",
          {
            class: "coze-button coze-small",
            type: "button",
            dataset: { testid: "coze-run-cancel" },
            onclick: () => model.send({ type: "cancel" }),
          },
          "Cancel"
        )
      : null;
    const failedAt = (model.get("error") || {}).node_id;
    const retry = ["failed", "canceled"].includes(status)
      ? h(
          "button",
          {
            class: "coze-button coze-small",
            type: "button",
            title: "a new run that reuses the outputs of the nodes before this one",
            dataset: { testid: "coze-run-retry" },
            onclick: () => model.send({ type: "retry", from_node: failedAt || null }),
          },
          failedAt ? `Retry from ${failedAt}` : "Retry"
        )
      : null;
    const retryOf = model.get("retry_of")
      ? h("span", { class: "coze-run-id" }, `retry of run ${model.get("retry_of")}`)
      : null;
    header.replaceChildren(
      ...[
        h("span", { class: "coze-run-name" }, model.get("name") || "workflow"),
      h(
        "span",
        { class: `coze-pill coze-status-${status}`, dataset: { testid: "coze-run-status" } },
        STATUS_LABEL[status] || status
      ),
        h("span", { class: "coze-run-id" }, `run ${model.get("run_id")}`),
        retryOf,
        cancel,
        retry,
      ].filter(Boolean) // replaceChildren would write a null as the text "null"
    );
    el.dataset.status = status;
  };
  const drawNotice = () => {
    notice.textContent = model.get("notice") || "";
    notice.style.display = model.get("notice") ? "" : "none";
  };
  const drawGraph = () => graph.replaceChildren(renderGraph(model));
  const drawMessages = () =>
    messages.replaceChildren(
      ...(model.get("messages") || []).map((m) =>
        h(
          "div",
          { class: "coze-run-message", dataset: { testid: "coze-run-message" } },
          h("span", { class: "coze-run-message-node" }, m.node_title || m.node_id || ""),
          h("span", {}, m.content)
        )
      )
    );
  let shown = "";
  const drawForms = () => {
    const pending = model.get("pending") || [];
    const key = pending.map((p) => p.event_id).join(",");
    if (key === shown) return; // keep what the person is typing
    shown = key;
    forms.replaceChildren(...pending.map((p) => questionForm(model, p, answer)));
  };
  const drawResult = () => {
    const status = model.get("status");
    const error = model.get("error");
    if (status === "failed" && error) {
      const { headline, detail } = describeError(error, model.get("nodes"));
      result.replaceChildren(
        h(
          "div",
          { class: "coze-error", dataset: { testid: "coze-run-error" } },
          h("div", { class: "coze-error-headline" }, headline),
          detail ? h("pre", { class: "coze-error-detail" }, detail) : null
        )
      );
    } else if (status === "succeeded") {
      result.replaceChildren(
        h(
          "pre",
          { class: "coze-run-outputs", dataset: { testid: "coze-run-outputs" } },
          JSON.stringify(model.get("outputs"), null, 2)
        )
      );
    } else {
      result.replaceChildren();
    }
  };
  const all = () => {
    drawHeader();
    drawNotice();
    drawGraph();
    drawMessages();
    drawForms();
    drawResult();
  };
  all();
  model.on("change:status", () => {
    drawHeader();
    drawResult();
  });
  model.on("change:name", drawHeader);
  model.on("change:run_id", drawHeader);
  model.on("change:retry_of", drawHeader);
  model.on("change:error", drawHeader);
  model.on("change:notice", drawNotice);
  model.on("change:nodes", drawGraph);
  model.on("change:edges", drawGraph);
  model.on("change:messages", drawMessages);
  model.on("change:pending", drawForms);
  model.on("change:outputs", drawResult);
  model.on("change:error", drawResult);
}

export default { render };
