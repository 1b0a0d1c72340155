// The labelling page: shows the pair the server hands this labeller, loops both clips in
// sync, and sends the answer (keys L / R / E / S or the buttons). The server replies once
// the label is on disk, with the next pair. U (or its button) takes back your latest answer
// and shows that pair again.
"use strict";

const params = new URLSearchParams(location.search);
if (params.has("token")) sessionStorage.setItem("drlhp-token", params.get("token"));
const token = sessionStorage.getItem("drlhp-token") || "";
history.replaceState(null, "", "/");  // keep the token out of the address bar and history
const NAME_RE = /^[\p{L}\p{N}][\p{L}\p{N}_ .'-]{0,39}$/u;
const $ = (id) => document.getElementById(id);

let name = localStorage.getItem("drlhp-name") || "";
let current = null;   // {pair, left, right: Image, frames, cols, w, h, zoom, fps, t0}
let settings = null;  // {w, h, zoom, fps}: how the server says to show frames
let episode = null;   // {id, img, frames, cols}
let sending = false;
let undoable = null;  // the pair id of my latest answer I may take back (the server says which)

async function api(path, body) {
  const init = {cache: "no-store", headers: {"X-Drlhp-Token": token}};
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  return response.json();
}

function loadImage(src) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error(`could not load ${src}`));
    img.src = `${src}?token=${encodeURIComponent(token)}`;
  });
}

function showCounts(r) {
  let text = `Your labels: ${r.mine}`;
  if (r.pace !== null) text += ` (${r.pace.toFixed(1)} s each)`;
  text += ` · the run's labels: ${r.total}`;
  if (r.remaining !== null) text += ` · left in the label budget: ${r.remaining}`;
  $("counts").textContent = text;
  $("task").hidden = !r.instructions;
  $("task-text").textContent = r.instructions || "";
  undoable = r.undo;
  $("undo").disabled = undoable === null;
}

function drawFrame(canvas, img, i, cols, w, h, zoom) {
  if (canvas.width !== w * zoom || canvas.height !== h * zoom) {
    canvas.width = w * zoom;
    canvas.height = h * zoom;
  }
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = false;  // whole-number zoom, square pixels
  ctx.drawImage(img, (i % cols) * w, Math.floor(i / cols) * h, w, h, 0, 0, w * zoom, h * zoom);
}

function animate(now) {
  if (current) {
    const c = current;
    const i = Math.floor(((now - c.t0) / 1000) * c.fps) % c.frames;
    drawFrame($("left"), c.left, i, c.cols, c.w, c.h, c.zoom);
    drawFrame($("right"), c.right, i, c.cols, c.w, c.h, c.zoom);
    $("frame").value = (i + 1) / c.frames;
  }
  if (episode && $("episode-box").open) {
    const zoom = Math.max(1, Math.floor(episode.zoom / 2));
    const i = Math.floor((now / 1000) * episode.fps) % episode.frames;
    drawFrame($("episode"), episode.img, i, episode.cols, episode.w, episode.h, zoom);
  }
  requestAnimationFrame(animate);
}

async function show(r) {
  showCounts(r);
  settings = {w: r.w, h: r.h, zoom: r.zoom, fps: r.fps};
  if (r.pair === null) {
    current = null;
    $("pair").hidden = $("buttons").hidden = $("frame").hidden = true;
    $("status").textContent = r.remaining === 0 ? "The run's label budget is spent: thank you!"
                                                : "Waiting for clips to compare…";
    setTimeout(nextPair, 500);
    return;
  }
  const [left, right] = await Promise.all([loadImage(`/clip/${r.left}.png`), loadImage(`/clip/${r.right}.png`)]);
  current = {...r, left, right, t0: performance.now()};
  $("pair").hidden = $("buttons").hidden = $("frame").hidden = false;
  $("status").textContent = (r.undone !== undefined ? `Took back your answer: answer pair ${r.pair} again. ` : "")
    + `Pair ${r.pair}: which clip shows the better behaviour?` + (r.second ? " (a second opinion)" : "");
}

async function nextPair() {
  try {
    await show(await api(`/api/next?name=${encodeURIComponent(name)}`));
  } catch (e) {
    $("status").textContent = `${e.message} — retrying`;
    setTimeout(nextPair, 2000);
  }
}

async function send(path, body, failure) {
  if (sending) return;
  sending = true;
  document.querySelectorAll("nav button").forEach((b) => { b.disabled = true; });
  try {
    await show(await api(path, body));
  } catch (e) {
    $("status").textContent = `${failure} (${e.message}).`;
  } finally {
    sending = false;
    document.querySelectorAll("nav button[data-label]").forEach((b) => { b.disabled = false; });
    $("undo").disabled = undoable === null;
  }
}

function answer(label) {
  if (current) send("/api/answer", {pair: current.pair, label, name}, "Your answer was not saved. Answer again");
}

function undo() {
  if (undoable !== null) send("/api/undo", {pair: undoable, name}, "Nothing was taken back");
}

async function watchEpisodes() {
  try {
    const r = await api("/api/episode");
    if (r.episode !== null && settings && (!episode || episode.id !== r.episode)) {
      const img = await loadImage(`/episode/${r.episode}.png`);
      episode = {id: r.episode, img, frames: r.frames, cols: r.cols, ...settings};
      $("episode").hidden = false;
      $("no-episode").hidden = true;
    }
  } catch (e) { /* a newer episode replaced it: take that one next time */ }
  setTimeout(watchEpisodes, 5000);
}

document.addEventListener("keydown", (event) => {
  if (event.target.tagName === "INPUT" || event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key.toLowerCase();
  const label = {l: "L", r: "R", e: "E", s: "skip"}[key];
  if (label) {
    event.preventDefault();
    answer(label);
  } else if (key === "u") {
    event.preventDefault();
    undo();
  }
});
document.querySelectorAll("nav button[data-label]").forEach(
  (b) => b.addEventListener("click", () => answer(b.dataset.label)));
$("undo").addEventListener("click", undo);

function start() {
  $("who").hidden = true;
  nextPair();
  watchEpisodes();
  requestAnimationFrame(animate);
}

if (NAME_RE.test(name)) {
  start();
} else {
  $("who").hidden = false;
  $("who").addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = $("name").value.trim();
    if (!NAME_RE.test(typed)) {
      $("status").textContent = "A name of 1–40 letters, digits, spaces or . ' - _, please.";
      return;
    }
    name = typed;
    localStorage.setItem("drlhp-name", name);
    start();
  });
}
