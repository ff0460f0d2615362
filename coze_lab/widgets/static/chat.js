// coze_lab chat widget (anywidget ESM): streamed markdown, collapsible tool calls,
// cancel, clear context, history. The kernel streams; this renders and sends actions.

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

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function inline(text) {
  return escapeHtml(text)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noopener">$1</a>');
}

/** A small, safe markdown subset: fences, headings, lists, quotes, inline marks. */
export function markdown(source) {
  const out = [];
  const lines = String(source || "").split("\n");
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    para = [];
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      const code = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) code.push(lines[i++]);
      out.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,4})\s+(.*)$/);
    const bullet = line.match(/^\s*[-*]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (heading) {
      flush();
      out.push(`<h${heading[1].length + 2}>${inline(heading[2])}</h${heading[1].length + 2}>`);
    } else if (bullet || numbered) {
      if (para.length) {
        out.push(`<p>${para.map(inline).join("<br>")}</p>`);
        para = [];
      }
      const kind = bullet ? "ul" : "ol";
      if (list !== kind) {
        if (list) out.push(`</${list}>`);
        out.push(`<${kind}>`);
        list = kind;
      }
      out.push(`<li>${inline((bullet || numbered)[1])}</li>`);
    } else if (line.startsWith("> ")) {
      flush();
      out.push(`<blockquote>${inline(line.slice(2))}</blockquote>`);
    } else if (!line.trim()) {
      flush();
    } else {
      if (list) {
        out.push(`</${list}>`);
        list = null;
      }
      para.push(line);
    }
  }
  flush();
  return out.join("");
}

const TOOL_TYPES = ["function_call", "tool_output", "tool_response"];

function messageView(m) {
  if (m.type === "section") {
    return h("div", { class: "coze-chat-section", dataset: { testid: "coze-chat-section" } }, "— context cleared —");
  }
  if (TOOL_TYPES.includes(m.type)) {
    const label = m.type === "function_call" ? "Tool call" : "Tool result";
    let body = m.content;
    try {
      body = JSON.stringify(JSON.parse(m.content), null, 2);
    } catch {
      /* plain text */
    }
    return h(
      "details",
      { class: "coze-chat-tool", dataset: { testid: "coze-chat-tool", type: m.type } },
      h("summary", {}, label),
      h("pre", {}, body)
    );
  }
  if (m.type === "follow_up") {
    return h("div", { class: "coze-chat-followup" }, m.content);
  }
  const bubble = h("div", {
    class: `coze-chat-msg coze-chat-${m.role}${m.streaming ? " coze-streaming" : ""}`,
    dataset: { testid: `coze-chat-${m.role}`, id: m.id },
  });
  if (m.role === "assistant") bubble.innerHTML = markdown(m.content);
  else bubble.textContent = m.content;
  if (m.usage) bubble.append(h("div", { class: "coze-chat-usage", dataset: { testid: "coze-chat-usage" } }, usageText(m.usage)));
  return bubble;
}

/** An answer's usage: "42 tokens (30 in, 12 out) · cost 0.00012". */
function usageText(u) {
  const cost = typeof u.cost === "number" ? ` · cost ${u.cost.toPrecision(3)}` : "";
  return `${u.token_count || 0} tokens (${u.input_count || 0} in, ${u.output_count || 0} out)${cost}`;
}

/** A question a tool's workflow waits on: choice buttons, a form, or free text. */
function questionForm(q, answer) {
  const data = q.data || {};
  const box = h("div", {
    class: "coze-form",
    dataset: { testid: "coze-chat-question", eventId: q.event_id, runId: q.run_id },
  });
  const status = h("div", { class: "coze-form-status" });
  const submit = (value, controls) => {
    controls.forEach((c) => (c.disabled = true));
    status.textContent = "sending…";
    answer(q.event_id, value, (error) => {
      status.textContent = error;
      controls.forEach((c) => (c.disabled = false));
    });
  };
  box.append(h("div", { class: "coze-form-node" }, `A workflow waits at ${q.node_title || "a question"}`));
  if (q.type === "input") {
    if (data.prompt) box.append(h("div", { class: "coze-form-question" }, data.prompt));
    const fields = ((data.form && data.form.fields) || []).map((f) => {
      const type = f.type || "string";
      const input =
        type === "boolean"
          ? h("input", { type: "checkbox", name: f.name })
          : h("input", { type: type === "string" ? "text" : "number", step: type === "integer" ? "1" : "any", name: f.name });
      box.append(h("label", { class: "coze-form-field" }, h("span", {}, f.name), input));
      return [f, input];
    });
    const button = h("button", { class: "coze-button coze-primary", type: "button" }, "Submit");
    button.addEventListener("click", () => {
      const value = {};
      for (const [f, input] of fields) {
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
      const buttons = data.choices.map((c) => h("button", { class: "coze-button", type: "button", dataset: { choice: c } }, c));
      buttons.forEach((b) => b.addEventListener("click", () => submit(b.dataset.choice, buttons)));
      box.append(h("div", { class: "coze-choices" }, buttons));
    } else {
      const text = h("textarea", { rows: "2", placeholder: "Your answer" });
      const button = h("button", { class: "coze-button coze-primary", type: "button" }, "Answer");
      button.addEventListener("click", () => text.value.trim() && submit(text.value, [button, text]));
      box.append(text, button);
    }
  }
  box.append(status);
  return box;
}

const KIND_LABELS = {
  chat: "Chat", message: "You", tool_call: "Tool call", tool_result: "Tool result",
  answer: "Answer", run: "Run", node: "Node", question: "Question", file: "File",
};
const STATE_LABELS = { idle: "new", running: "running", waiting: "waiting for you", done: "done", failed: "failed", canceled: "canceled" };

function duration(ms) {
  if (ms === null || ms === undefined) return "";
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function tokens(usage) {
  const count = usage && (usage.token_count || usage.total_tokens);
  return count ? `${count} tok` : "";
}

/** The conversation's activity: every message, tool call, node and file, in order. */
export function timelineView(activity) {
  const items = (activity && activity.items) || [];
  const start = items.length ? items[0].at_ms : 0;
  const state = (activity && activity.state) || "idle";
  const head = h(
    "div",
    { class: "coze-timeline-head" },
    h("span", { class: `coze-state coze-state-${state}`, dataset: { testid: "coze-chat-state", state } }, STATE_LABELS[state] || state),
    h("span", {}, `${items.length} events`),
    tokens(activity && activity.usage) || null
  );
  const rows = items.map((item) => {
    const meta = [item.status, duration(item.duration_ms), tokens(item.usage)].filter(Boolean).join(" · ");
    return h(
      "details",
      { class: `coze-timeline-item coze-kind-${item.kind}`, dataset: { testid: "coze-timeline-item", kind: item.kind, path: item.path || "" } },
      h(
        "summary",
        {},
        h("span", { class: "coze-timeline-at" }, `+${((item.at_ms - start) / 1000).toFixed(1)}s`),
        h("span", { class: "coze-timeline-kind" }, KIND_LABELS[item.kind] || item.kind),
        h("span", { class: "coze-timeline-title" }, item.title),
        meta ? h("span", { class: "coze-timeline-meta" }, meta) : null
      ),
      item.detail ? h("pre", {}, item.detail) : null
    );
  });
  return h("div", { class: "coze-timeline", dataset: { testid: "coze-timeline" } }, head, ...rows);
}

function render({ model, el }) {
  el.classList.add("coze-widget", "coze-chat");
  const title = h("div", { class: "coze-chat-title" });
  const log = h("div", { class: "coze-chat-log", dataset: { testid: "coze-chat-log" } });
  const error = h("div", { class: "coze-error" });
  const questions = h("div", { class: "coze-chat-questions" });
  const failures = new Map(); // event_id -> show(error) of a form waiting for the kernel
  model.on("msg:custom", (msg) => {
    if (msg && msg.type === "error" && failures.has(String(msg.event_id))) {
      failures.get(String(msg.event_id))(msg.msg || "error");
      failures.delete(String(msg.event_id));
    }
  });
  const answer = (eventId, data, showError) => {
    failures.set(String(eventId), showError);
    model.send({ type: "answer", event_id: eventId, data });
  };
  const input = h("textarea", { rows: "2", placeholder: "Message the bot (Enter to send)", dataset: { testid: "coze-chat-input" } });
  const send = h("button", { class: "coze-button coze-primary", type: "button", dataset: { testid: "coze-chat-send" } }, "Send");
  const cancel = h("button", { class: "coze-button", type: "button" }, "Cancel");
  const clear = h("button", { class: "coze-button", type: "button", title: "Start a new context; history stays" }, "Clear context");
  const history = h("button", { class: "coze-button", type: "button" }, "History");
  const activity = h("details", { class: "coze-chat-activity", dataset: { testid: "coze-chat-activity" } }, h("summary", {}, "Activity"));
  const timeline = h("div", {});
  activity.append(timeline);
  activity.addEventListener("toggle", () => activity.open && model.send({ type: "activity" }));
  el.append(title, log, questions, error, h("div", { class: "coze-chat-input" }, input, h("div", { class: "coze-chat-actions" }, send, cancel, clear, history)), activity);
  const drawTimeline = () => timeline.replaceChildren(timelineView(model.get("timeline") || {}));

  const submit = () => {
    const text = input.value.trim();
    if (!text || model.get("status") === "streaming") return;
    model.send({ type: "send", text });
    input.value = "";
  };
  send.addEventListener("click", submit);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      submit();
    }
  });
  cancel.addEventListener("click", () => model.send({ type: "cancel" }));
  clear.addEventListener("click", () => model.send({ type: "clear" }));
  history.addEventListener("click", () => model.send({ type: "history" }));

  const draw = () => {
    const status = model.get("status");
    title.textContent = `${model.get("bot_name") || "bot " + model.get("bot_id")} · ${status}`;
    el.dataset.status = status;
    const stick = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    log.replaceChildren(...(model.get("messages") || []).map(messageView));
    if (stick) log.scrollTop = log.scrollHeight;
    error.textContent = model.get("error") || "";
    error.style.display = model.get("error") ? "" : "none";
    send.disabled = status === "streaming";
    cancel.disabled = status !== "streaming";
  };
  let shown = "";
  const drawQuestions = () => {
    const items = model.get("questions") || [];
    const key = items.map((q) => q.event_id).join(",");
    if (key === shown) return; // keep what the person is typing
    shown = key;
    questions.replaceChildren(...items.map((q) => questionForm(q, answer)));
  };
  draw();
  drawQuestions();
  for (const name of ["messages", "status", "error", "bot_name"]) model.on(`change:${name}`, draw);
  model.on("change:questions", drawQuestions);
  drawTimeline();
  model.on("change:timeline", drawTimeline);
}

export default { render };
