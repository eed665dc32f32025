// bm25lab's page: search with filters and paging, a document's view, and the evaluation of a run.
// Plain JavaScript over the server's JSON API; every text from the server is set as text (never HTML).
"use strict";

const $ = (id) => document.getElementById(id);
const state = { index: null, offset: 0, pageSize: 10, query: "", more: false };
const OPERATORS = ["=", "in", ">=", ">", "<=", "<", "exists"];

async function api(path, params) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of params || []) url.searchParams.append(key, value);
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function element(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function setStatus(id, text, error) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", Boolean(error));
}

// ------------------------------------------------------------------ indexes and their facts
async function loadIndexes() {
  const listed = await api("/indexes");
  const select = $("index");
  select.replaceChildren(...listed.indexes.map((i) =>
    element("option", { value: i.name, text: `${i.name} (${i.documents.toLocaleString()} docs)` })));
  state.index = listed.default;
  select.value = state.index;
  await loadInfo();
}

async function loadInfo() {
  const info = await api("/info", [["index", state.index]]);
  $("variant").replaceChildren(...info.variants.map((v) => element("option", { value: v, text: v })));
  $("metadata-keys").replaceChildren(...info.metadata_keys.map((k) => element("option", { value: k })));
  $("q").placeholder = `Search ${info.name}: ${info.documents.toLocaleString()} documents…`;
}

// ------------------------------------------------------------------ filters
function addFilter(key = "", op = "=", value = "", exclude = false) {
  const row = element("div", { className: "filter-row" });
  const keyInput = element("input", { className: "key", list: "metadata-keys", placeholder: "metadata key",
    "aria-label": "filter key" });
  keyInput.value = key;
  const opSelect = element("select", { className: "op", "aria-label": "filter operator" },
    ...OPERATORS.map((o) => element("option", { value: o, text: o })));
  opSelect.value = op;
  const valueInput = element("input", { className: "value", placeholder: "value (in: a,b,c)", "aria-label": "filter value" });
  valueInput.value = value;
  const notLabel = element("label", {}, element("input", { type: "checkbox", className: "exclude" }), " leave out");
  notLabel.querySelector("input").checked = exclude;
  const remove = element("button", { type: "button", className: "remove", "aria-label": "remove filter", text: "✕" });
  remove.addEventListener("click", () => row.remove());
  opSelect.addEventListener("change", () => { valueInput.hidden = opSelect.value === "exists"; });
  valueInput.hidden = op === "exists";
  row.append(keyInput, opSelect, valueInput, notLabel, remove);
  $("filter-rows").append(row);
  return row;
}

function filterParams() {
  const params = [];
  for (const row of $("filter-rows").children) {
    const key = row.querySelector(".key").value.trim();
    if (!key) continue;
    const op = row.querySelector(".op").value;
    const value = row.querySelector(".value").value.trim();
    const condition = op === "exists" ? `${key} exists` : op === "in" ? `${key} in ${value}` : `${key}${op}${quoted(value)}`;
    params.push([row.querySelector(".exclude").checked ? "where_not" : "where", condition]);
  }
  return params;
}

function quoted(value) {
  return value === "" || /^[=<>!]/.test(value) || value.includes('"') ? JSON.stringify(value) : value;
}

// ------------------------------------------------------------------ searching
async function search(offset) {
  state.query = $("q").value.trim();
  state.offset = offset;
  state.pageSize = Number($("page-size").value);
  if (!state.query) { setStatus("status", "Type a query."); return; }
  const params = [["q", state.query], ["k", state.pageSize], ["offset", offset], ["index", state.index],
    ["variant", $("variant").value || "lucene"], ["k1", $("k1").value], ["b", $("b").value], ["snippets", "true"],
    ...filterParams()];
  setStatus("status", "Searching…");
  try {
    const found = await api("/search", params);
    render(found);
  } catch (error) {
    $("hits").replaceChildren();
    setStatus("status", error.message, true);
    state.more = false;
    updatePager();
  }
}

function render(found) {
  state.more = found.more;
  const first = found.offset + 1;
  const last = found.offset + found.hits.length;
  const shown = found.hits.length ? `Results ${first}–${last}` : "No results";
  const filtered = found.where.where.length + found.where.where_not.length ? " (filtered)" : "";
  setStatus("status", `${shown} for “${found.query}”${filtered} · ${found.took_ms.toFixed(1)} ms`);
  $("hits").replaceChildren(...found.hits.map(hitElement));
  updatePager();
}

function hitElement(hit) {
  const title = element("button", { type: "button", className: "hit-title", text: hit.title || hit.doc_id });
  title.addEventListener("click", () => showDocument(hit.doc_id));
  const head = element("div", { className: "hit-head" },
    element("span", { className: "rank", text: `${hit.rank}.` }), title,
    element("span", { className: "score", text: hit.score.toFixed(4) }));
  const item = element("li", { className: "hit", "data-doc-id": hit.doc_id, "data-rank": String(hit.rank) }, head,
    element("div", { className: "doc-id", text: hit.doc_id }));
  if (hit.snippet) item.append(snippetElement(hit.snippet));
  item.append(metadataElement(hit.metadata));
  return item;
}

function snippetElement(snippet) {
  const node = element("p", { className: "snippet" });
  let cursor = 0;
  for (const [start, end] of snippet.highlights) {
    node.append(snippet.text.slice(cursor, start), element("mark", { text: snippet.text.slice(start, end) }));
    cursor = end;
  }
  node.append(snippet.text.slice(cursor));
  return node;
}

function metadataElement(metadata) {
  const list = element("div", { className: "metadata" });
  for (const [key, value] of Object.entries(metadata || {})) {
    const shown = typeof value === "string" ? value : JSON.stringify(value);
    list.append(element("span", { className: "chip", "data-key": key, "data-value": shown },
      element("b", { text: key }), ` ${shown.length > 60 ? shown.slice(0, 60) + "…" : shown}`));
  }
  return list;
}

function updatePager() {
  $("prev").disabled = state.offset === 0;
  $("next").disabled = !state.more;
  $("page").textContent = state.query ? `page ${Math.floor(state.offset / state.pageSize) + 1}` : "";
}

async function showDocument(docId) {
  try {
    const doc = await api(`/documents/${encodeURIComponent(docId).replace(/%2F/g, "/")}`, [["index", state.index]]);
    $("document-title").textContent = doc.title || doc.doc_id;
    $("document-id").textContent = doc.doc_id;
    $("document-metadata").replaceChildren(...Object.entries(doc.metadata).flatMap(([k, v]) =>
      [element("dt", { text: k }), element("dd", { text: typeof v === "string" ? v : JSON.stringify(v) })]));
    $("document-text").textContent = doc.text;
    $("document").hidden = false;
  } catch (error) {
    setStatus("status", error.message, true);
  }
}

// ------------------------------------------------------------------ evaluation
async function loadSources() {
  const sources = await api("/evaluation/sources");
  $("run").replaceChildren(...sources.runs.map((r) => element("option", { value: r, text: r })));
  $("qrels").replaceChildren(...sources.qrels.map((q) => element("option", { value: q, text: q })));
  $("measures").value = sources.measures.join(", ");
  if (!sources.runs.length || !sources.qrels.length) {
    setStatus("evaluation-status", "This server offers no runs or qrels (bm25lab serve --runs FILE --qrels FILE).");
  }
}

async function evaluate() {
  const measures = $("measures").value.split(/[\s,]+/).filter(Boolean);
  const params = [["run", $("run").value], ["qrels", $("qrels").value], ...measures.map((m) => ["measure", m])];
  setStatus("evaluation-status", "Evaluating…");
  try {
    const result = await api("/evaluation", params);
    renderEvaluation(result);
    setStatus("evaluation-status", `${result.run} against ${result.qrels}: ${result.num_queries} queries evaluated` +
      (result.missing_from_run ? `, ${result.missing_from_run} judged queries not in the run` : ""));
  } catch (error) {
    $("evaluation-result").hidden = true;
    setStatus("evaluation-status", error.message, true);
  }
}

const fixed = (v) => (v === null || v === undefined ? "–" : typeof v === "number" ? v.toFixed(4) : String(v));

function renderEvaluation(result) {
  const head = element("tr", {}, element("th", { text: "run" }), element("th", { text: "queries" }),
    ...result.measures.map((m) => element("th", { text: m })));
  const row = element("tr", {}, element("td", { text: result.run }), element("td", { text: String(result.num_queries) }),
    ...result.measures.map((m) => element("td", { text: fixed(result.mean[m]), "data-measure": m })));
  $("means").replaceChildren(element("thead", {}, head), element("tbody", {}, row));
  const qids = Object.keys(result.per_query);
  $("per-query").replaceChildren(
    element("thead", {}, element("tr", {}, element("th", { text: "query" }),
      ...result.measures.map((m) => element("th", { text: m })))),
    element("tbody", {}, ...qids.map((q) => element("tr", {}, element("td", { text: q }),
      ...result.measures.map((m) => element("td", { text: fixed(result.per_query[q][m]) }))))));
  $("pr-plot").replaceChildren(linePlot(result.curve.recall, result.curve.precision, "recall", "precision"));
  const first = result.measures[0];
  $("per-query-caption").textContent = `${first} per query (sorted)`;
  const values = qids.map((q) => result.per_query[q][first]).filter((v) => typeof v === "number").sort((a, b) => b - a);
  $("query-plot").replaceChildren(barPlot(values, first));
  $("evaluation-result").hidden = false;
}

// ------------------------------------------------------------------ plots (SVG, no library)
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}

function frame(width, height, xLabel, yLabel, top) {
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  const m = { left: 44, right: 12, top: 10, bottom: 34 };
  const w = width - m.left - m.right, h = height - m.top - m.bottom;
  root.append(svg("rect", { x: m.left, y: m.top, width: w, height: h, fill: "none", stroke: "#d9dee5" }));
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    const y = m.top + h * (1 - t);
    root.append(svg("line", { x1: m.left - 4, x2: m.left, y1: y, y2: y, stroke: "#888" }),
      svg("text", { x: m.left - 6, y: y + 4, "text-anchor": "end" }, (t * top).toFixed(2)));
  }
  root.append(svg("text", { x: m.left + w / 2, y: height - 6, "text-anchor": "middle" }, xLabel),
    svg("text", { x: 10, y: m.top + h / 2, transform: `rotate(-90 10 ${m.top + h / 2})`, "text-anchor": "middle" }, yLabel));
  return { root, m, w, h };
}

function linePlot(xs, ys, xLabel, yLabel) {
  const { root, m, w, h } = frame(420, 280, xLabel, yLabel, 1);
  const points = xs.map((x, i) => [x, ys[i]]).filter(([, y]) => y !== null);
  const at = ([x, y]) => `${(m.left + x * w).toFixed(1)},${(m.top + (1 - y) * h).toFixed(1)}`;
  root.append(svg("polyline", { points: points.map(at).join(" "), fill: "none", stroke: "#2456a6", "stroke-width": 2,
    class: "curve" }));
  for (const p of points) {
    const [cx, cy] = at(p).split(",");
    root.append(svg("circle", { cx, cy, r: 3, fill: "#2456a6" }));
  }
  for (const t of [0, 0.5, 1]) {
    root.append(svg("text", { x: m.left + t * w, y: m.top + h + 14, "text-anchor": "middle" }, t.toFixed(1)));
  }
  return root;
}

function barPlot(values, label) {
  const top = Math.max(1, ...values);
  const { root, m, w, h } = frame(420, 280, `queries (${values.length})`, label, top);
  const width = w / Math.max(values.length, 1);
  values.forEach((v, i) => root.append(svg("rect", { x: m.left + i * width, y: m.top + h * (1 - v / top),
    width: Math.max(width - 0.5, 0.5), height: h * (v / top), fill: "#7b9bd1", class: "bar" })));
  return root;
}

// ------------------------------------------------------------------ wiring
function showTab(name) {
  for (const tab of document.querySelectorAll(".tab[data-tab]")) tab.classList.toggle("active", tab.dataset.tab === name);
  $("search").hidden = name !== "search";
  $("evaluation").hidden = name !== "evaluation";
}

window.addEventListener("DOMContentLoaded", async () => {
  $("search-form").addEventListener("submit", (event) => { event.preventDefault(); search(0); });
  $("prev").addEventListener("click", () => search(Math.max(0, state.offset - state.pageSize)));
  $("next").addEventListener("click", () => search(state.offset + state.pageSize));
  $("add-filter").addEventListener("click", () => addFilter().querySelector(".key").focus());
  $("close-document").addEventListener("click", () => { $("document").hidden = true; });
  $("index").addEventListener("change", async () => { state.index = $("index").value; await loadInfo(); search(0); });
  $("evaluation-form").addEventListener("submit", (event) => { event.preventDefault(); evaluate(); });
  for (const tab of document.querySelectorAll(".tab[data-tab]")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  try {
    await loadIndexes();
    await loadSources();
    document.body.dataset.ready = "true";
  } catch (error) {
    setStatus("status", error.message, true);
  }
});
