// coze_lab Web SDK embed: one line on any page opens a chat with a published bot.
//   <script src="https://HOST/coze_lab/sdk/embed.js" data-bot-id="7..." data-token="pat_..."
//           data-title="Ask us" async></script>
// The token must be a personal access token bound to the Web SDK connector (999), scope
// "chat": it can only chat with bots published there. The chat runs in an iframe served
// by coze_lab (the host page never sees the conversation).
(function () {
  var script = document.currentScript;
  if (!script) return;
  var botId = script.getAttribute("data-bot-id") || "";
  var token = script.getAttribute("data-token") || "";
  var title = script.getAttribute("data-title") || "Chat";
  var base = script.src.replace(/embed\.js(\?.*)?$/, "");
  var src = base + "chat?bot_id=" + encodeURIComponent(botId) + "&title=" +
    encodeURIComponent(title) + "#token=" + encodeURIComponent(token);

  var button = document.createElement("button");
  button.type = "button";
  button.textContent = title;
  button.setAttribute("data-testid", "coze-lab-embed-button");
  button.style.cssText = "position:fixed;right:20px;bottom:20px;z-index:2147483000;" +
    "background:#4d53e8;color:#fff;border:none;border-radius:24px;padding:12px 18px;" +
    "font:600 14px system-ui,sans-serif;box-shadow:0 4px 14px rgba(0,0,0,.2);cursor:pointer";
  var frame = null;
  button.addEventListener("click", function () {
    if (!frame) {
      frame = document.createElement("iframe");
      frame.src = src;
      frame.title = title;
      frame.setAttribute("data-testid", "coze-lab-embed-frame");
      frame.style.cssText = "position:fixed;right:20px;bottom:76px;z-index:2147483000;" +
        "width:min(380px,calc(100vw - 40px));height:min(560px,calc(100vh - 110px));" +
        "border:1px solid #e3e5e8;border-radius:12px;background:#fff;" +
        "box-shadow:0 8px 30px rgba(0,0,0,.18)";
      document.body.appendChild(frame);
    } else {
      frame.style.display = frame.style.display === "none" ? "" : "none";
    }
  });
  document.body.appendChild(button);
})();
