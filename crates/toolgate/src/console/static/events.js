// The console's live events: reads the stream and adds each event to the table, as text.
"use strict";
(function () {
  const table = document.getElementById("events");
  const state = document.getElementById("stream-state");
  if (!table || !state) return;
  const rows = table.querySelector("tbody");
  const pattern = table.dataset.pattern || "";
  const url = "/console/events/stream" + (pattern ? "?pattern=" + encodeURIComponent(pattern) : "");
  const source = new EventSource(url);
  const keep = 500;
  source.onopen = function () { state.textContent = "Live: events appear as they happen."; };
  source.onerror = function () { state.textContent = "Disconnected; reconnecting…"; };
  source.onmessage = add;
  function add(message) {
    let event;
    try { event = JSON.parse(message.data); } catch (e) { return; }
    const row = document.createElement("tr");
    const time = document.createElement("td");
    time.textContent = event.time || "";
    const kind = document.createElement("th");
    kind.scope = "row";
    kind.textContent = event.kind || message.type;
    const fields = document.createElement("td");
    const code = document.createElement("code");
    const rest = Object.assign({}, event);
    delete rest.time;
    delete rest.kind;
    code.textContent = JSON.stringify(rest);
    fields.appendChild(code);
    row.append(time, kind, fields);
    rows.insertBefore(row, rows.firstChild);
    while (rows.children.length > keep) rows.removeChild(rows.lastChild);
  }
})();
