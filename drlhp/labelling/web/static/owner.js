// The run owner's page: who labels, at what pace, and how often labellers agree (refreshed every 2 s).
"use strict";

const params = new URLSearchParams(location.search);
if (params.has("token")) sessionStorage.setItem("drlhp-owner-token", params.get("token"));
const token = sessionStorage.getItem("drlhp-owner-token") || "";
history.replaceState(null, "", "/owner");  // keep the token out of the address bar and history
const $ = (id) => document.getElementById(id);

function fill(table, rows) {
  const body = $(table).querySelector("tbody");
  body.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement("tr");
    for (const [text, numeric] of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      if (numeric) td.className = "num";
      tr.append(td);
    }
    return tr;
  }));
}

async function refresh() {
  try {
    const response = await fetch("/api/owner", {cache: "no-store", headers: {"X-Drlhp-Token": token}});
    if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
    const r = await response.json();
    let counts = `The run's labels: ${r.total}`;
    if (r.remaining !== null) counts += ` · left in the label budget: ${r.remaining}`;
    $("counts").textContent = counts;
    $("task").hidden = !r.instructions;
    $("task-text").textContent = r.instructions || "";
    fill("labellers", r.labellers.map((l) => [[l.name], [l.labels, true],
      [l.pace === null ? "–" : l.pace.toFixed(1), true], [`${Math.round(l.idle)} s ago`, true]]));
    fill("agreement", r.agreement.map((g) => [[`${g.a} · ${g.b}`], [g.pairs, true], [g.same, true],
      [g.rate === null ? "–" : `${Math.round(100 * g.rate)} %`, true]]));
    $("status").textContent = r.agreement.length ? "" : "No pair has been answered by two labellers yet.";
  } catch (e) {
    $("status").textContent = `${e.message} — retrying`;
  }
  setTimeout(refresh, 2000);
}

refresh();
