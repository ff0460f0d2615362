// coze_lab Web SDK chat page: a published bot on the Web SDK connector (999), called with
// a personal access token bound to that connector. Coze's /v3/chat, streamed with fetch().
//   <base>coze_lab/sdk/chat?bot_id=...&title=...#token=pat_...
// The token travels in the fragment (never sent to the server as part of a URL) and is
// kept in sessionStorage; the conversation id in localStorage, per bot. A chat still
// running when the page reloads is re-attached (GET v3/chat/events, from any replica).

const query = new URLSearchParams(location.search);
const botId = query.get("bot_id") || "";
const api = location.pathname.replace(/sdk\/[^/]*$/, ""); // <base>coze_lab/
const $ = (id) => document.getElementById(id);
const tokenKey = `coze-lab-sdk-token:${botId}`;
const conversationKey = `coze-lab-sdk-conversation:${botId}`;
const userKey = "coze-lab-sdk-user";
const runningKey = `coze-lab-sdk-running:${botId}`;

// Storage may be refused in a third-party frame (the embed): fall back to memory.
function storage(kind) {
  const memory = new Map();
  const fallback = {
    getItem: (k) => (memory.has(k) ? memory.get(k) : null),
    setItem: (k, v) => memory.set(k, String(v)),
    removeItem: (k) => memory.delete(k),
  };
  try {
    const real = window[kind];
    real.getItem("coze-lab-probe");
    return real;
  } catch {
    return fallback;
  }
}
const sessionStore = storage("sessionStorage");
const localStore = storage("localStorage");

function takeToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const fromUrl = fragment.get("token");
  if (fromUrl) {
    sessionStore.setItem(tokenKey, fromUrl);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStore.getItem(tokenKey) || "";
}

let token = takeToken();
let streaming = false;
let chatId = "";

function userId() {
  let id = localStore.getItem(userKey);
  if (!id) {
    id = "web-" + Math.random().toString(36).slice(2, 12);
    localStore.setItem(userKey, id);
  }
  return id;
}

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function inline(text) {
  return escapeHtml(text)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^)\s]+)\)/g, '<a href="$2" target="_blank" rel="noopener">$1</a>');
}

function markdown(source) {
  const out = [];
  let para = [];
  let list = false;
  const flush = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    para = [];
    if (list) out.push("</ul>");
    list = false;
  };
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      flush();
      const code = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) code.push(lines[i++]);
      out.push(`<pre><code>${escapeHtml(code.join("\n"))}</code></pre>`);
    } else if (/^\s*(?:[-*]|\d+[.)])\s+/.test(line)) {
      if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`), (para = []);
      if (!list) out.push("<ul>"), (list = true);
      out.push(`<li>${inline(line.replace(/^\s*(?:[-*]|\d+[.)])\s+/, ""))}</li>`);
    } else if (!line.trim()) flush();
    else para.push(line);
  }
  flush();
  return out.join("");
}

function bubble(role, text) {
  const el = document.createElement("div");
  el.className = `msg ${role}`;
  el.dataset.testid = `sdk-${role}`;
  if (role === "assistant") el.innerHTML = markdown(text);
  else el.textContent = text;
  $("log").append(el);
  $("log").scrollTop = $("log").scrollHeight;
  return el;
}

function showError(text) {
  $("error").hidden = !text;
  $("error").textContent = text || "";
}

async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      let parsed = data.join("\n");
      try {
        parsed = JSON.parse(parsed);
      } catch {
        /* plain */
      }
      yield { event, data: parsed };
    }
  }
}

// Render a chat's events (a /v3/chat stream, or a re-attached /v3/chat/events stream).
async function show(response, answers, question) {
  for await (const { event, data } of events(response)) {
    if (event === "conversation.chat.created") {
      chatId = data.id;
      if (data.conversation_id) localStore.setItem(conversationKey, data.conversation_id);
      sessionStore.setItem(
        runningKey,
        JSON.stringify({ chat_id: data.id, conversation_id: data.conversation_id, question }),
      );
    } else if (event === "conversation.message.delta" || event === "conversation.message.completed") {
      if (data.role !== "assistant") continue;
      if (data.type === "follow_up" && event.endsWith("completed")) {
        const chip = document.createElement("button");
        chip.className = "followup";
        chip.textContent = data.content;
        chip.onclick = () => ask(data.content);
        $("log").append(chip);
        continue;
      }
      if (data.type !== "answer") continue;
      let node = answers.get(data.id);
      if (!node) {
        node = bubble("assistant", "");
        node.classList.add("streaming");
        node.dataset.raw = "";
        answers.set(data.id, node);
      }
      node.dataset.raw = event.endsWith("completed") ? data.content : node.dataset.raw + data.content;
      node.innerHTML = markdown(node.dataset.raw);
      if (event.endsWith("completed")) node.classList.remove("streaming");
      $("log").scrollTop = $("log").scrollHeight;
    } else if (event === "conversation.chat.failed") {
      showError((data.last_error && data.last_error.msg) || "The chat failed.");
    } else if (event === "error") {
      showError(data.msg || "Error");
    } else if (event === "done") {
      sessionStore.removeItem(runningKey); // the chat ended: nothing to re-attach to
    }
  }
}

// After a reload: the chat that was streaming goes on where it is (it ran on regardless).
async function reattach() {
  let running = null;
  try {
    running = JSON.parse(sessionStore.getItem(runningKey) || "null");
  } catch {
    running = null;
  }
  if (!running || !token) return;
  streaming = true;
  $("send").disabled = true;
  bubble("user", running.question || "");
  const answers = new Map();
  try {
    const params = new URLSearchParams({
      conversation_id: running.conversation_id,
      chat_id: running.chat_id,
    });
    const response = await fetch(`${api}v3/chat/events?${params}`, {
      headers: { Authorization: `Bearer ${token}` },
    });
    if (!response.ok) {
      sessionStore.removeItem(runningKey);
      return;
    }
    await show(response, answers, running.question);
  } catch (error) {
    showError(error.message || String(error));
  } finally {
    answers.forEach((node) => node.classList.remove("streaming"));
    streaming = false;
    $("send").disabled = false;
  }
}

async function ask(text) {
  if (streaming || !text.trim()) return;
  if (!token) {
    $("token-form").hidden = false;
    return;
  }
  streaming = true;
  $("send").disabled = true;
  showError("");
  bubble("user", text);
  const conversation = localStore.getItem(conversationKey);
  const url = `${api}v3/chat` + (conversation ? `?conversation_id=${encodeURIComponent(conversation)}` : "");
  const answers = new Map();
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({
        bot_id: botId,
        user_id: userId(),
        stream: true,
        auto_save_history: true,
        additional_messages: [{ role: "user", content: text, content_type: "text" }],
      }),
    });
    if (!response.ok || !(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      const body = await response.json().catch(() => ({}));
      // a refused token: HTTP 401, or Coze's 4100 in the JSON body that answers a failed
      // stream request (status 200, as on Coze)
      if (response.status === 401 || body.code === 4100) {
        sessionStore.removeItem(tokenKey);
        token = "";
        $("token-form").hidden = false;
      }
      throw new Error(body.msg ? `[${body.code}] ${body.msg}` : `HTTP ${response.status}`);
    }
    await show(response, answers, text);
  } catch (error) {
    showError(error.message || String(error));
  } finally {
    answers.forEach((node) => node.classList.remove("streaming"));
    streaming = false;
    $("send").disabled = false;
  }
}

function start() {
  $("title").textContent = query.get("title") || "Chat";
  document.title = $("title").textContent;
  if (!botId) showError("This page needs ?bot_id=<published bot id>.");
  if (!token) $("token-form").hidden = false;
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    token = $("token").value.trim();
    sessionStore.setItem(tokenKey, token);
    $("token-form").hidden = !!token;
  });
  $("ask").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("input").value;
    $("input").value = "";
    ask(text);
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      $("ask").requestSubmit();
    }
  });
  reattach();
  $("reset").addEventListener("click", () => {
    localStore.removeItem(conversationKey);
    $("log").replaceChildren();
  });
}

start();
