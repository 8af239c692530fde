// pincompile console: a terminal per pod on the app page. A pod's Terminal button opens
// xterm.js on a WebSocket to .../terminal (the console's session cookie, the page's CSRF
// value), framed as the API's exec: first byte the channel (0 stdin, 1 stdout, 2 stderr,
// 3 status JSON, 4 resize JSON {"Width", "Height"}). A pod of several containers has a
// picker beside its button (the button's data-picker); the shell runs in the picked one.
// Without this script the buttons and pickers stay hidden; the pods table is the same.
(() => {
  "use strict";
  const STDIN = 0, STDOUT = 1, STDERR = 2, STATUS = 3, RESIZE = 4;
  const panel = document.getElementById("terminal");
  if (!panel || !window.Terminal || !window.FitAddon) return;
  document.documentElement.classList.add("terminal-ready"); // shows the buttons, pickers
  const screen = panel.querySelector("#terminal-screen");
  const status = panel.querySelector("#terminal-status");
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let session = null;

  const say = (text) => { status.textContent = text; };

  const frame = (channel, bytes) => {
    const message = new Uint8Array(bytes.length + 1);
    message[0] = channel;
    message.set(bytes, 1);
    return message;
  };

  const close = () => {
    if (!session) return;
    const { socket, term, onResize } = session;
    session = null;
    window.removeEventListener("resize", onResize);
    socket.close();
    term.dispose();
  };

  const statusOf = (payload, where) => {
    const doc = JSON.parse(decoder.decode(payload));
    if (doc.type === "target") return `Connected to ${doc.cluster}/${doc.pod} (container ${doc.container}).`;
    if (doc.type === "exit") return `The shell in ${where} exited (code ${doc.exitCode}).`;
    return `The session ended: ${doc.message || doc.reason}`;
  };

  const open = (cluster, pod, container) => {
    close();
    panel.hidden = false;
    const where = container ? `${cluster}/${pod}/${container}` : `${cluster}/${pod}`;
    const term = new window.Terminal({ cursorBlink: true, fontSize: 14, scrollback: 2000 });
    const fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(screen);
    fit.fit();
    const params = new URLSearchParams({ cluster, pod, csrf: panel.dataset.csrf });
    if (container) params.set("container", container);
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}${panel.dataset.socket}?${params}`,
      ["v1.exec.pincompute.io"]);
    socket.binaryType = "arraybuffer";
    const onResize = () => fit.fit();
    session = { socket, term, onResize };
    let started = false, ended = false;
    const resize = ({ cols, rows }) => {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(frame(RESIZE, encoder.encode(JSON.stringify({ Width: cols, Height: rows }))));
      }
    };
    say(`Connecting to ${where}…`);
    socket.addEventListener("open", () => { resize(term); term.focus(); });
    socket.addEventListener("message", (event) => {
      const data = new Uint8Array(event.data);
      if (data[0] === STDOUT || data[0] === STDERR) term.write(data.subarray(1));
      else if (data[0] === STATUS) {
        started = true;
        ended = ended || JSON.parse(decoder.decode(data.subarray(1))).type !== "target";
        say(statusOf(data.subarray(1), where));
      }
    });
    socket.addEventListener("close", () => {
      if (!started) say(`The terminal in ${where} was refused (you may not exec here, the pod is gone, or your session ended: reload the page).`);
      else if (!ended) say(`The connection to ${where} closed.`);
    });
    term.onData((text) => {
      if (socket.readyState === WebSocket.OPEN) socket.send(frame(STDIN, encoder.encode(text)));
    });
    term.onResize(resize);
    window.addEventListener("resize", onResize);
  };

  document.addEventListener("click", (event) => {
    const button = event.target.closest(".terminal-open");
    if (!button) return;
    const picker = button.dataset.picker && document.getElementById(button.dataset.picker);
    open(button.dataset.cluster, button.dataset.pod, picker ? picker.value : "");
  });
  panel.querySelector("#terminal-close").addEventListener("click", () => {
    close();
    panel.hidden = true;
  });
  window.addEventListener("pagehide", close);
})();
