// The dashboard's one script (a file of the server: the Content-Security-Policy runs no inline
// script). A page that follows a live stream names it in <div id="stream" data-kind data-url>:
// "runs" reloads the list when a run changes status; "run" appends the run's events to its
// timeline as they happen. When the session ends (logout elsewhere, the key revoked, expiry)
// the server closes the stream and the page reloads, which leads to the login page.
(function () {
  "use strict";
  const live = document.getElementById("stream");
  if (!live) return;
  const source = new EventSource(live.dataset.url);
  const reload = (after) => setTimeout(() => location.reload(), after);
  source.addEventListener("closed", () => { source.close(); reload(0); });
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) reload(500); };
  if (live.dataset.kind === "runs") {
    let timer = null;
    source.onmessage = () => { if (!timer) timer = reload(1000); };
    return;
  }
  const body = document.querySelector("#timeline tbody");
  const cell = (text, cls) => {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  };
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    const tr = document.createElement("tr");
    tr.className = "new";
    tr.dataset.seq = e.seq;
    tr.append(cell(e.seq, "mono"), cell((e.at || "").slice(11, 19), "muted time"),
              cell(e.type), cell(e.step || ""),
              cell(e.data == null ? "" : JSON.stringify(e.data), "mono"));
    body.append(tr);
    if (e.type === "step_completed") {
      const done = document.getElementById("steps-done");
      done.textContent = Number(done.textContent) + 1;
      if (e.data && "next" in e.data) {
        document.getElementById("next-step").textContent = e.data.next || "—";
      }
    }
    if (e.type === "status" && e.data && e.data.to) {
      const badge = document.getElementById("status");
      badge.textContent = e.data.to;
      badge.className = "badge " + e.data.to;
      if (e.data.to === "WAITING_APPROVAL" || e.data.from === "WAITING_APPROVAL") reload(150);
    }
  };
  source.addEventListener("end", () => {
    source.close();
    document.getElementById("live").textContent = "finished";
    reload(150);
  });
})();
