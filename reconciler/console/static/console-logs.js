// pincompile console: the logs panel follows the app's merged logs (a streaming fetch of
// .../logs/stream, one "cluster/pod/container line" a line) and keeps the last MAX lines.
// Without this script the panel's form shows the last lines as a page of its own.
(() => {
  "use strict";
  const MAX = 2000;
  const panel = document.getElementById("logs");
  if (!panel) return;
  const form = panel.querySelector("form");
  const out = panel.querySelector("#log-lines");
  const status = panel.querySelector("#log-status");
  const follow = panel.querySelector("#log-follow");
  follow.closest("label").hidden = false;
  let running = null;

  const say = (text) => { status.textContent = text; };

  const stop = (note) => {
    if (running) running.abort();
    running = null;
    if (note) say(note);
  };

  const append = (lines) => {
    const atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
    for (const line of lines) out.appendChild(document.createTextNode(line + "\n"));
    while (out.childNodes.length > MAX) out.removeChild(out.firstChild);
    if (atEnd) out.scrollTop = out.scrollHeight;
  };

  const start = async () => {
    stop();
    const mine = new AbortController();
    running = mine;
    const params = new URLSearchParams(new FormData(form));
    out.textContent = "";
    say("Following new lines…");
    try {
      const answer = await fetch(`${form.dataset.stream}?${params}`,
        { signal: mine.signal, credentials: "same-origin", headers: { Accept: "text/plain" } });
      const type = answer.headers.get("content-type") || "";
      if (answer.redirected || !type.startsWith("text/plain")) {
        say("Your session has ended: reload the page to log in again.");
        return;
      }
      if (!answer.ok) {
        say(`Logs refused (${answer.status}): ${(await answer.text()).trim()}`);
        return;
      }
      const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += value;
        const lines = pending.split("\n");
        pending = lines.pop();
        append(lines);
      }
      if (pending) append([pending]);
      if (running === mine) { running = null; follow.checked = false; say("The stream ended."); }
    } catch (error) {
      if (!mine.signal.aborted) { running = null; follow.checked = false;
        say(`The stream broke: ${error.message}`); }
    }
  };

  form.addEventListener("submit", (event) => {
    if (!follow.checked) return; // not following: the page of the last lines
    event.preventDefault();
    start();
  });
  follow.addEventListener("change", () => (follow.checked ? start() : stop("Paused.")));
  window.addEventListener("pagehide", () => stop());
  if (follow.checked) start();
})();
