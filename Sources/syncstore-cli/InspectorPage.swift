/// The inspector's page: plain HTML, CSS and JavaScript served by the binary (no CDN, no build
/// step). Every value from a store is put in the page as text (textContent), never as HTML.
enum InspectorPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>SyncStore inspector</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/app.css?token={{TOKEN}}">
<script src="/app.js?token={{TOKEN}}" defer></script>
</head>
<body>
<header>
  <h1>SyncStore inspector</h1>
  <label>Store <select id="store"></select></label>
  <span id="mode" class="badge"></span>
  <span id="live" class="live" title="The open view follows the store's commits: this process's, syncs' and other processes'"></span>
  <nav>
    <button data-tab="query" class="tab active">Smart SQL</button>
    <button data-tab="soups" class="tab">Soups</button>
    <button data-tab="entries" class="tab">Entries</button>
    <button data-tab="syncs" class="tab">Syncs</button>
    <button data-tab="facts" class="tab">Store</button>
  </nav>
</header>
<main>
<section id="tab-query" class="panel">
  <div class="sqlbox">
    <textarea id="sql" spellcheck="false" rows="4" placeholder="select {soup:_soup} from {soup}   (type { for soups, {soup: for paths; Ctrl+Enter runs)"></textarea>
    <ul id="suggest" hidden></ul>
  </div>
  <div class="controls">
    <button id="run">Run</button>
    <label>Page size <input id="q-size" type="number" min="1" max="1000" value="50"></label>
    <label>Page <input id="q-page" type="number" min="0" value="0"></label>
    <button id="q-prev">&#8592; Prev</button><button id="q-next">Next &#8594;</button>
    <span id="q-meta" class="meta"></span>
  </div>
  <div id="q-error" class="error" hidden></div>
  <div id="q-result" class="result"></div>
</section>
<section id="tab-soups" class="panel" hidden>
  <div id="soups-error" class="error" hidden></div>
  <div id="soups"></div>
</section>
<section id="tab-entries" class="panel" hidden>
  <div class="controls">
    <label>Soup <select id="e-soup"></select></label>
    <label>Filter <select id="e-path"></select></label>
    <input id="e-value" placeholder="value (% for LIKE)">
    <button id="e-go">Show</button>
    <label>Page size <input id="e-size" type="number" min="1" max="1000" value="20"></label>
    <label>Page <input id="e-page" type="number" min="0" value="0"></label>
    <button id="e-prev">&#8592; Prev</button><button id="e-next">Next &#8594;</button>
    <span id="e-meta" class="meta"></span>
  </div>
  <div id="e-write" class="write" hidden>
    <textarea id="e-json" rows="3" spellcheck="false" placeholder='{"Name": "...", "__local__": true, "__locally_created__": true}  (with _soupEntryId: replaces that entry)'></textarea>
    <button id="e-upsert">Upsert</button>
  </div>
  <div id="e-error" class="error" hidden></div>
  <div id="e-result" class="result"></div>
</section>
<section id="tab-syncs" class="panel" hidden>
  <div id="syncs-error" class="error" hidden></div>
  <div id="syncs-live" class="meta"></div>
  <div id="live-sync" class="livesync" data-state="stopped">
    <span class="livesync-label">Live sync in this inspector:</span> <span id="live-sync-text" class="status">stopped</span>
    <span id="live-sync-detail" class="meta"></span>
    <button id="live-start" hidden>Start live sync</button><button id="live-stop" hidden>Stop live sync</button>
    <span id="live-sync-hint" class="meta"></span>
  </div>
  <div id="syncs"></div>
</section>
<section id="tab-facts" class="panel" hidden>
  <div id="facts-error" class="error" hidden></div>
  <dl id="facts"></dl>
</section>
</main>
</body>
</html>
"""#

    static let style = #"""
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2330; background: #f5f6f8; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: 12px; padding: 10px 16px; background: #16325c; color: #fff; }
header h1 { font-size: 17px; margin: 0 12px 0 0; }
header select { font: inherit; padding: 3px 6px; }
nav { display: flex; gap: 4px; margin-left: auto; }
.tab { font: inherit; background: transparent; color: #cfe0ff; border: 1px solid transparent; border-radius: 4px; padding: 4px 10px; cursor: pointer; }
.tab:hover { background: rgba(255,255,255,.15); }
.tab.active { background: #fff; color: #16325c; }
main { padding: 14px 16px; }
.panel { background: #fff; border: 1px solid #d8dde6; border-radius: 6px; padding: 12px; }
.controls { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 8px 0; }
.controls input[type=number] { width: 70px; }
button { font: inherit; padding: 3px 10px; border: 1px solid #b0b8c5; border-radius: 4px; background: #fff; cursor: pointer; }
button:hover { background: #eef2f8; }
#run, #e-go, #e-upsert { background: #0b5cab; color: #fff; border-color: #0b5cab; }
.sqlbox { position: relative; }
textarea { width: 100%; font: 13px/1.4 ui-monospace, Menlo, Consolas, monospace; padding: 6px; border: 1px solid #b0b8c5; border-radius: 4px; }
#suggest { position: absolute; z-index: 5; list-style: none; margin: 0; padding: 2px 0; background: #fff; border: 1px solid #8a96a8; border-radius: 4px; max-height: 220px; overflow: auto; min-width: 220px; box-shadow: 0 4px 12px rgba(0,0,0,.15); }
#suggest li { padding: 2px 10px; font-family: ui-monospace, Menlo, Consolas, monospace; cursor: pointer; }
#suggest li.sel, #suggest li:hover { background: #0b5cab; color: #fff; }
#suggest li small { color: #7a8699; margin-left: 8px; }
#suggest li.sel small { color: #d7e6ff; }
.error { background: #fdecea; color: #8c1d18; border: 1px solid #f4b4ae; border-radius: 4px; padding: 8px 10px; margin: 8px 0; white-space: pre-wrap; }
.meta { color: #5b6678; }
.result { overflow: auto; max-height: calc(100vh - 230px); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; border-bottom: 1px solid #e3e7ee; padding: 4px 8px; }
th { position: sticky; top: 0; background: #eef1f6; font-weight: 600; }
pre { margin: 0; font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; overflow-wrap: break-word; max-height: 260px; overflow: auto; }
tr.dirty td { background: #fff6dc; }
.flag { display: inline-block; font-size: 11px; padding: 0 6px; margin: 1px 2px; border-radius: 8px; background: #f2c94c; color: #3d2e00; }
.lasterror { color: #8c1d18; font-weight: 600; }
.badge { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #2e844a; }
.badge.writes { background: #ba0517; }
.live { font-size: 12px; color: #cfe0ff; }
.livesync { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 6px 0 10px; }
.livesync-label { font-weight: 600; }
.status.live { background: #cdefc4; color: #22683e; }
.status.offline { background: #fddde3; color: #8c1d18; }
.status.connecting, .status.catchingUp { background: #d8e6fe; color: #0b5cab; }
.status { font-weight: 600; padding: 1px 8px; border-radius: 10px; background: #e3e7ee; }
.status.RUNNING { background: #d8e6fe; color: #0b5cab; }
.status.DONE { background: #cdefc4; color: #22683e; }
.status.FAILED { background: #fddde3; color: #8c1d18; }
.status.STOPPED { background: #fef1c8; color: #7a5300; }
.bar { width: 160px; height: 10px; background: #e3e7ee; border-radius: 5px; overflow: hidden; }
.bar > div { height: 100%; background: #0b5cab; transition: width .2s; }
.ids a { margin-right: 6px; }
#syncs-table td:nth-child(2) { white-space: nowrap; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dt { font-weight: 600; color: #3e4a5c; }
dd { margin: 0; }
.specs code { display: inline-block; background: #eef1f6; border-radius: 3px; padding: 0 5px; margin: 1px 3px 1px 0; font-size: 12px; }
"""#

    static let script = #"""
"use strict";
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const state = { store: "", global: false, soups: [], allowWrites: false, liveSyncRemote: false, live: null, events: null, lastQuery: null, changes: 0 };
const $ = (id) => document.getElementById(id);

// Elements are built from text only: a value from a store never becomes markup.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "width") node.style.width = v;  // CSSOM: the CSP refuses style attributes
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  return node;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function showError(id, message) { const n = $(id); n.textContent = message || ""; n.hidden = !message; }

// encodeURIComponent, not URLSearchParams: the server reads "+" as a plus, not a space.
function query(params) {
  return Object.entries(params).map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(String(v))).join("&");
}

async function api(path, params, body) {
  const q = query(Object.assign({ store: state.store, global: state.global ? "1" : "0" }, params || {}));
  const init = { headers: { "X-Inspector-Token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(Object.assign({ store: state.store, global: state.global }, body));
  }
  const response = await fetch(path + "?" + q, init);
  const data = await response.json().catch(() => ({ error: { code: "HTTP", message: "HTTP " + response.status } }));
  if (!response.ok || (data && data.error)) {
    const e = data && data.error ? data.error : { code: "HTTP", message: "HTTP " + response.status };
    throw new Error(e.code + ": " + e.message);
  }
  return data;
}

// A string holding JSON (a sync's __last_error__) as that JSON, to be shown pretty.
function parsed(value) {
  if (typeof value !== "string" || !/^\s*[[{]/.test(value)) return value;
  try { return JSON.parse(value); } catch (e) { return value; }
}

// "60 rows · 3 pages · page index 0": page indexes count from 0, as in query specs.
function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }
function pages(page, one, many) {
  return plural(page.totalEntries, one, many) + " · " + plural(page.totalPages, "page", "pages") + " · page index " + page.currentPageIndex;
}

function cell(value) {
  if (value !== null && typeof value === "object") return el("pre", {}, JSON.stringify(value, null, 2));
  if (value === null) return el("span", { class: "meta" }, "null");
  return String(value);
}

// ---- store picker
async function loadStores() {
  const s = await api("/api/stores");
  state.allowWrites = s.allowWrites;
  state.liveSyncRemote = s.liveSyncRemote;
  const mode = $("mode");
  mode.textContent = s.allowWrites ? "writes allowed" : "read-only";
  mode.className = "badge" + (s.allowWrites ? " writes" : "");
  const select = clear($("store"));
  for (const [label, names, global] of [["User stores", s.user, false], ["Global stores", s.global, true]]) {
    if (!names.length) continue;
    const group = el("optgroup", { label });
    for (const n of names) group.appendChild(el("option", { value: (global ? "g:" : "u:") + n }, n));
    select.appendChild(group);
  }
  if (!state.store) { state.store = s.initialStore; state.global = s.initialGlobal; }
  select.value = (state.global ? "g:" : "u:") + state.store;
  $("e-write").hidden = !s.allowWrites;
}

async function switchStore() {
  const v = $("store").value;
  state.global = v.startsWith("g:");
  state.store = v.slice(2);
  clear($("q-result")); clear($("e-result")); $("q-meta").textContent = ""; $("e-meta").textContent = "";
  state.lastQuery = null;
  await refreshAll();
}

async function refreshAll() {
  await Promise.all([loadSoups(), loadFacts()]);
  startEvents();
}

// ---- soups
async function loadSoups() {
  try {
    state.soups = await api("/api/soups");
    showError("soups-error", "");
  } catch (e) { state.soups = []; showError("soups-error", e.message); }
  const rows = state.soups.map((s) => el("tr", { "data-soup": s.soupName },
    el("td", {}, s.soupName),
    el("td", { class: "count" }, s.entries),
    el("td", {}, s.dirty),
    el("td", { class: "specs" }, ...(s.indexes || []).flatMap((i) => [el("code", {}, i.path + ":" + i.type), " "])),
    el("td", {}, el("button", { onclick: () => browse(s.soupName) }, "Browse"))));
  clear($("soups")).appendChild(el("table", { id: "soups-table" },
    el("thead", {}, el("tr", {}, ...["Soup", "Entries", "Dirty", "Index specs", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows)));
  const soupSelect = $("e-soup");
  const current = soupSelect.value;
  clear(soupSelect);
  for (const s of state.soups) soupSelect.appendChild(el("option", { value: s.soupName }, s.soupName));
  if (current && state.soups.some((s) => s.soupName === current)) soupSelect.value = current;
  fillPaths();
}

// The filter paths of the chosen soup; the chosen path is kept when the soup still has it (the
// soups are read again after each change of the store).
function fillPaths() {
  const soup = state.soups.find((s) => s.soupName === $("e-soup").value);
  const select = $("e-path");
  const chosen = select.dataset.soup === $("e-soup").value ? select.value : "";
  clear(select);
  select.dataset.soup = $("e-soup").value;
  select.appendChild(el("option", { value: "" }, "(all entries)"));
  select.appendChild(el("option", { value: "_soupEntryId" }, "_soupEntryId"));
  for (const i of (soup ? soup.indexes : [])) select.appendChild(el("option", { value: i.path }, i.path));
  if ([...select.options].some((o) => o.value === chosen)) select.value = chosen;
}

// ---- Smart SQL and its completion
// again: the query last run, run again for a change of the store (not what the box holds now).
async function runQuery(again) {
  const asked = again || { sql: $("sql").value, pageSize: $("q-size").value, pageIndex: $("q-page").value };
  const started = performance.now();
  try {
    const page = await api("/api/query", asked);
    state.lastQuery = asked;
    const result = clear($("q-result"));
    showError("q-error", "");
    const rows = page.currentPageOrderedEntries || [];
    const width = Math.max(page.columns.length, ...rows.map((r) => (Array.isArray(r) ? r.length : 1)));
    const heads = [];
    for (let i = 0; i < width; i++) heads.push(el("th", {}, page.columns[i] || "col" + (i + 1)));
    const body = rows.map((r) => el("tr", {}, ...(Array.isArray(r) ? r : [r]).map((v) => el("td", {}, cell(v)))));
    result.appendChild(el("table", { id: "q-table" }, el("thead", {}, el("tr", {}, ...heads)), el("tbody", {}, ...body)));
    $("q-page").value = page.currentPageIndex;
    $("q-meta").textContent = pages(page, "row", "rows") + " · " + rows.length + " shown · " + Math.round(performance.now() - started) + " ms";
  } catch (e) {
    clear($("q-result"));
    showError("q-error", e.message);
    $("q-meta").textContent = "";
    if (!again) state.lastQuery = null;
  }
}

const suggest = { items: [], index: 0, start: 0 };
function completions() {
  const ta = $("sql");
  const before = ta.value.slice(0, ta.selectionStart);
  let m = before.match(/\{([^{}:\s]*)$/);
  if (m) {
    return { start: ta.selectionStart - m[1].length, items: state.soups.map((s) => s.soupName)
      .filter((n) => n.toLowerCase().startsWith(m[1].toLowerCase())).map((n) => ({ text: n, note: "soup" })) };
  }
  m = before.match(/\{([^{}:\s]+):([^{}\s]*)$/);
  if (m) {
    const soup = state.soups.find((s) => s.soupName === m[1]);
    if (!soup) return null;
    const paths = [["_soup", "whole entry"], ["_soupEntryId", "id"], ["_soupLastModifiedDate", "ms"]]
      .concat(soup.indexes.map((i) => [i.path, i.type]));
    return { start: ta.selectionStart - m[2].length, items: paths.filter(([p]) => p.toLowerCase().startsWith(m[2].toLowerCase()))
      .map(([p, t]) => ({ text: p, note: t })) };
  }
  return null;
}
function updateSuggest() {
  const found = completions();
  const list = clear($("suggest"));
  if (!found || !found.items.length) { list.hidden = true; suggest.items = []; return; }
  suggest.items = found.items; suggest.start = found.start; suggest.index = 0;
  found.items.forEach((it, i) => list.appendChild(el("li", { class: i === 0 ? "sel" : "", onmousedown: (ev) => { ev.preventDefault(); accept(i); } },
    it.text, " ", el("small", {}, it.note))));
  list.style.left = "8px";
  list.style.top = ($("sql").offsetHeight + 2) + "px";
  list.hidden = false;
}
function accept(i) {
  const ta = $("sql");
  const item = suggest.items[i];
  if (!item) return;
  const after = ta.value.slice(ta.selectionStart);
  const close = after.startsWith("}") ? "" : "}";
  ta.value = ta.value.slice(0, suggest.start) + item.text + close + after;
  const caret = suggest.start + item.text.length + 1;
  ta.setSelectionRange(caret, caret);
  $("suggest").hidden = true; suggest.items = [];
  ta.focus();
}
function suggestKeys(ev) {
  if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); $("suggest").hidden = true; runQuery(); return; }
  if ($("suggest").hidden || !suggest.items.length) return;
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    suggest.index = (suggest.index + (ev.key === "ArrowDown" ? 1 : suggest.items.length - 1)) % suggest.items.length;
    [...$("suggest").children].forEach((li, i) => li.classList.toggle("sel", i === suggest.index));
  } else if (ev.key === "Enter" || ev.key === "Tab") {
    ev.preventDefault(); accept(suggest.index);
  } else if (ev.key === "Escape") {
    $("suggest").hidden = true;
  }
}

// ---- entries
function browse(soup, path, value) {
  showTab("entries");
  $("e-soup").value = soup;
  fillPaths();
  $("e-path").value = path || "";
  $("e-value").value = value === undefined ? "" : String(value);
  $("e-page").value = 0;
  loadEntries();
}

const FLAGS = ["__locally_created__", "__locally_updated__", "__locally_deleted__"];
async function loadEntries() {
  const soup = $("e-soup").value;
  if (!soup) { clear($("e-result")); return; }
  const params = { soup, pageSize: $("e-size").value, pageIndex: $("e-page").value };
  if ($("e-path").value) { params.path = $("e-path").value; params.value = $("e-value").value; }
  try {
    const page = await api("/api/entries", params);
    const result = clear($("e-result"));
    showError("e-error", "");
    const rows = (page.currentPageOrderedEntries || []).map((entry) => {
      const dirty = entry.__local__ === true;
      const flags = dirty ? FLAGS.filter((f) => entry[f] === true).map((f) => el("span", { class: "flag" }, f.replace(/_/g, " ").trim())) : [];
      const lastError = entry.__last_error__;
      return el("tr", { class: dirty ? "dirty" : "", "data-id": entry._soupEntryId },
        el("td", {}, entry._soupEntryId),
        el("td", {}, dirty ? el("span", { class: "flag" }, "local") : "", ...flags),
        el("td", { class: "lasterror" }, lastError === undefined ? "" : cell(parsed(lastError))),
        el("td", {}, cell(entry)),
        state.allowWrites ? el("td", {}, el("button", { onclick: () => { $("e-json").value = JSON.stringify(entry, null, 2); } }, "Edit"),
          el("button", { onclick: () => removeEntry(soup, entry._soupEntryId) }, "Delete")) : null);
    });
    const heads = ["_soupEntryId", "Local changes", "__last_error__", "Entry"].concat(state.allowWrites ? [""] : []);
    result.appendChild(el("table", { id: "e-table" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), el("tbody", {}, ...rows)));
    $("e-page").value = page.currentPageIndex;
    $("e-meta").textContent = pages(page, "entry", "entries");
  } catch (e) { clear($("e-result")); showError("e-error", e.message); $("e-meta").textContent = ""; }
}
async function upsertEntry() {
  try {
    await api("/api/upsert", {}, { soup: $("e-soup").value, entry: $("e-json").value });
    showError("e-error", "");
    await Promise.all([loadEntries(), loadSoups()]);
  } catch (e) { showError("e-error", e.message); }
}
async function removeEntry(soup, id) {
  try {
    await api("/api/delete", {}, { soup, ids: JSON.stringify([id]) });
    await Promise.all([loadEntries(), loadSoups()]);
  } catch (e) { showError("e-error", e.message); }
}

// ---- syncs, live
function startEvents() {
  if (state.events) state.events.close();
  const source = new EventSource("/api/events?" + query({ token: TOKEN, store: state.store, global: state.global ? "1" : "0" }));
  state.events = source;
  source.addEventListener("syncs", (ev) => {
    const data = JSON.parse(ev.data);
    if (data.error) { showError("syncs-error", data.error.code + ": " + data.error.message); return; }
    showError("syncs-error", "");
    renderSyncs(data.syncs, data.now);
    renderLive(data.live, data.now);
    $("syncs-live").textContent = "live · updated " + new Date(data.now).toLocaleTimeString();
  });
  source.addEventListener("change", (ev) => followChange(JSON.parse(ev.data)));
  source.onerror = () => { $("syncs-live").textContent = "reconnecting…"; };
}

// ---- the open view follows the store's commits (any handle, a sync, another process)
const refreshing = {};
// Runs fn now, or once more after the run in progress: never two at a time, never a queue.
async function refreshOnce(name, fn) {
  if (refreshing[name]) { refreshing[name] = "again"; return; }
  refreshing[name] = "running";
  try {
    do {
      if (refreshing[name] === "again") refreshing[name] = "running";
      await fn();
    } while (refreshing[name] === "again");
  } finally { delete refreshing[name]; }
}
function visible(name) { return !$("tab-" + name).hidden; }
// The soups a Smart SQL query names ({soup} and {soup:path}); null when it names none.
function soupsOf(sql) {
  const names = new Set([...sql.matchAll(/\{([^{}:\s]+)(?::[^{}]*)?\}/g)].map((m) => m[1]));
  return names.size ? names : null;
}
function followChange(change) {
  state.changes += 1;
  const live = $("live");
  live.textContent = "● live · " + change.soups.join(", ") + " changed at " + new Date(change.now).toLocaleTimeString();
  live.dataset.sequence = change.sequence;
  live.dataset.changes = state.changes;
  const touched = new Set(change.soups);
  const soupsChanged = change.removed.length > 0 || change.soups.some((n) => !state.soups.some((s) => s.soupName === n));
  if (visible("entries") && touched.has($("e-soup").value)) refreshOnce("entries", loadEntries);
  if (visible("query") && state.lastQuery) {
    const named = soupsOf(state.lastQuery.sql);
    if (!named || [...named].some((n) => touched.has(n))) refreshOnce("query", () => runQuery(state.lastQuery));
  }
  if (visible("soups") || soupsChanged) refreshOnce("soups", loadSoups);
  if (visible("facts")) refreshOnce("facts", loadFacts);
}

// The live sync of this inspector process (started from this page): its state as the library
// gives it, the countdown to the next retry when offline, start and stop when allowed.
function renderLive(live, now) {
  if (!live) return;
  state.live = { state: live, skew: Date.now() - now };
  const box = $("live-sync");
  box.dataset.state = live.state;
  box.dataset.syncs = (live.names || []).join(",");
  const text = $("live-sync-text");
  text.textContent = live.state === "catchingUp" ? "catching up" : live.state;
  text.className = "status " + live.state;
  const on = live.state !== "stopped";
  $("live-start").hidden = on || !state.allowWrites || !state.liveSyncRemote;
  $("live-stop").hidden = !on;
  $("live-sync-hint").textContent = on || (state.allowWrites && state.liveSyncRemote) ? ""
    : "(to start it here: inspect --allow-writes --url URL --token T; `sync --live` shows its own in its terminal)";
  liveDetail();
}
function liveDetail() {
  if (!state.live) return;
  const live = state.live.state;
  const parts = [];
  if (live.names && live.names.length) parts.push(live.names.join(", "));
  if (live.state === "offline" && live.nextRetryAt) {
    const left = Math.max(0, live.nextRetryAt - (Date.now() - state.live.skew));
    parts.push("retry in " + (left / 1000).toFixed(1) + " s");
  }
  const events = live.changeEvents;
  if (events) parts.push("change events " + events.state + " (" + events.events + ")" + (events.error ? ": " + events.error : ""));
  if (live.error) parts.push(live.error);
  $("live-sync-detail").textContent = parts.join(" · ");
}
async function liveAction(what) {
  try {
    renderLive(await api("/api/live/" + what, {}, {}), Date.now());
    showError("syncs-error", "");
  } catch (e) { showError("syncs-error", e.message); }
}

function records(s) { return s.totalSize > 0 ? Math.round(s.progress / 100 * s.totalSize) : 0; }
function ids(soup, list, label) {
  if (!list || !list.length) return null;
  return el("div", { class: "ids" }, label + ": ", ...list.map((id) => el("a", { href: "#", class: "entry-link", onclick: (ev) => { ev.preventDefault(); browse(soup, "_soupEntryId", id); } }, id)));
}
function renderSyncs(syncs, now) {
  const rows = syncs.map((s) => {
    const done = records(s);
    const seconds = s.startTime > 0 ? ((s.status === "RUNNING" ? now : (s.endTime || now)) - s.startTime) / 1000 : 0;
    const rate = seconds > 0 && done > 0 ? Math.round(done / seconds) : 0;
    const progress = el("div", { class: "progress" },
      el("div", { class: "bar" }, el("div", { width: Math.max(0, Math.min(100, s.progress)) + "%" })),
      el("div", { class: "meta" }, s.progress + "%" + (s.totalSize >= 0 ? " · " + done + " / " + s.totalSize + " records" : "") +
        (s.status === "RUNNING" || rate ? " · " + rate + " records/s" : "")));
    const problems = el("div", {},
      s.error ? el("div", { class: "lasterror" }, s.error) : null,
      ids(s.soupName, s.conflictEntryIds, "conflicts (" + s.conflicts + ")"),
      ids(s.soupName, s.errorEntryIds, "errors (" + (s.errors || 0) + ")"));
    return el("tr", { "data-sync": s.name || String(s._soupEntryId), "data-status": s.status, "data-progress": s.progress },
      el("td", {}, s._soupEntryId), el("td", {}, s.name || ""), el("td", {}, s.type), el("td", {}, s.soupName),
      el("td", {}, cell(s.target)), el("td", {}, cell(s.options)),
      el("td", {}, el("span", { class: "status " + s.status }, s.status)), el("td", {}, progress), el("td", {}, problems));
  });
  const heads = ["Id", "Name", "Type", "Soup", "Target", "Options", "Status", "Progress", "Last error, conflicts, errors"];
  clear($("syncs")).appendChild(syncs.length ? el("table", { id: "syncs-table" }, el("thead", {}, el("tr", {}, ...heads.map((h) => el("th", {}, h)))), el("tbody", {}, ...rows))
    : el("p", { class: "meta" }, "No syncs in this store."));
}

// ---- store facts
function bytes(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : (n / 1048576).toFixed(1) + " MiB"; }
async function loadFacts() {
  const dl = clear($("facts"));
  try {
    const f = await api("/api/facts");
    showError("facts-error", "");
    const items = [["File", f.path], ["Database file", bytes(f.dbBytes)], ["WAL file", bytes(f.walBytes)],
      ["Pages in use", bytes(f.usedBytes)], ["Encrypted", f.encrypted ? "yes (kdfIter " + f.kdfIter + ")" : "no"],
      ["Opened", f.readOnly ? "read-only" : "for writing (--allow-writes)"], ["Soups", f.soups],
      ["SQLite", f.sqliteVersion], ["SyncStore library", f.libraryVersion]];
    for (const [k, v] of items) { dl.appendChild(el("dt", {}, k)); dl.appendChild(el("dd", {}, v)); }
  } catch (e) { showError("facts-error", e.message); }
}

// ---- tabs and wiring
function showTab(name) {
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.tab === name);
  for (const p of document.querySelectorAll(".panel")) p.hidden = p.id !== "tab-" + name;
  if (name === "facts") loadFacts();
  if (name === "soups") loadSoups();
}
function step(pageId, delta, run) {
  $(pageId).value = Math.max(0, Number($(pageId).value || 0) + delta);
  run();
}

document.addEventListener("DOMContentLoaded", async () => {
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $("store").addEventListener("change", switchStore);
  $("run").addEventListener("click", () => { $("q-page").value = 0; runQuery(); });
  $("q-prev").addEventListener("click", () => step("q-page", -1, runQuery));
  $("q-next").addEventListener("click", () => step("q-page", 1, runQuery));
  $("sql").addEventListener("input", updateSuggest);
  $("sql").addEventListener("keydown", suggestKeys);
  $("sql").addEventListener("blur", () => { $("suggest").hidden = true; });
  $("e-soup").addEventListener("change", () => { fillPaths(); $("e-page").value = 0; loadEntries(); });
  $("e-go").addEventListener("click", () => { $("e-page").value = 0; loadEntries(); });
  $("e-prev").addEventListener("click", () => step("e-page", -1, loadEntries));
  $("e-next").addEventListener("click", () => step("e-page", 1, loadEntries));
  $("e-upsert").addEventListener("click", upsertEntry);
  $("live-start").addEventListener("click", () => liveAction("start"));
  $("live-stop").addEventListener("click", () => liveAction("stop"));
  setInterval(liveDetail, 500);
  try {
    await loadStores();
    await refreshAll();
    const first = state.soups.find((s) => s.soupName !== "syncs_soup") || state.soups[0];
    if (first && !$("sql").value) $("sql").value = "select {" + first.soupName + ":_soup} from {" + first.soupName + "}";
    document.body.dataset.ready = "1";
  } catch (e) { showError("q-error", e.message); }
});
"""#
}
