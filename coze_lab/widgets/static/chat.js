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
  return bubble;
}

function render({ model, el }) {
  el.classList.add("coze-widget", "coze-chat");
  const title = h("div", { class: "coze-chat-title" });
  const log = h("div", { class: "coze-chat-log", dataset: { testid: "coze-chat-log" } });
  const error = h("div", { class: "coze-error" });
  const input = h("textarea", { rows: "2", placeholder: "Message the bot (Enter to send)", dataset: { testid: "coze-chat-input" } });
  const send = h("button", { class: "coze-button coze-primary", type: "button", dataset: { testid: "coze-chat-send" } }, "Send");
  const cancel = h("button", { class: "coze-button", type: "button" }, "Cancel");
  const clear = h("button", { class: "coze-button", type: "button", title: "Start a new context; history stays" }, "Clear context");
  const history = h("button", { class: "coze-button", type: "button" }, "History");
  el.append(title, log, error, h("div", { class: "coze-chat-input" }, input, h("div", { class: "coze-chat-actions" }, send, cancel, clear, history)));

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
  draw();
  for (const name of ["messages", "status", "error", "bot_name"]) model.on(`change:${name}`, draw);
}

export default { render };
