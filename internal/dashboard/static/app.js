// The school dashboard: it reads the public report endpoints with the key
// the school enters, which it keeps in this tab's session storage only and
// sends in the x-api-key header, never in a URL.
"use strict";

const keyStore = "groupanalytics-key";
const $ = (id) => document.getElementById(id);
const endpoints = ["live-lecture", "chat"];
const names = { "live-lecture": "Live lecture", chat: "Chat" };
const colors = ["#2456a6", "#d9822b", "#3a9e5f", "#b8439a", "#7b61c9", "#c8a415", "#4aa3b5"];

let charts = {};
let running = null; // the AbortController of the load under way
let students = []; // the table's rows: {id, name, values, inactive}
let columns = []; // the table's value columns: {endpoint, title}
let sort = { column: -1, ascending: true }; // -1: the API's order (by name)

// ApiError is an answer other than 200, with what to tell the user.
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function report(endpoint, params, signal) {
  const key = sessionStorage.getItem(keyStore);
  const resp = await fetch(`/api/groups/${endpoint}?${new URLSearchParams(params)}`, {
    method: "POST",
    headers: { "x-api-key": key },
    signal,
  });
  if (resp.ok) {
    return resp;
  }
  let message = `The service answered ${resp.status}.`;
  try {
    message = (await resp.json()).error || message;
  } catch {}
  if (resp.status === 403) {
    message = "This key was not accepted: it may be mistyped or revoked, or your school's plan may have ended.";
  } else if (resp.status === 429) {
    message = `Too many requests: try again in ${resp.headers.get("Retry-After") || "a few"} seconds.`;
  }
  throw new ApiError(resp.status, message);
}

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").classList.toggle("error", Boolean(isError));
}

function showKeyForm(message) {
  $("dashboard").hidden = true;
  $("sign-out").hidden = true;
  $("key-form").hidden = false;
  $("key").value = "";
  let note = $("key-error");
  if (!note) {
    note = document.createElement("p");
    note.id = "key-error";
    note.setAttribute("role", "alert");
    note.className = "error";
    $("key-form").append(note);
  }
  note.textContent = message || "";
  $("key").focus();
}

function showDashboard() {
  $("key-form").hidden = true;
  $("dashboard").hidden = false;
  $("sign-out").hidden = false;
}

// periodLabels names the periods the API cuts [start, end] into, as it
// does: days, ISO weeks (Monday to Sunday) or calendar months, the first
// and last clipped to the range.
function periodLabels(start, end, interval) {
  const labels = [];
  const day = new Date(start + "T00:00:00Z");
  const last = new Date(end + "T00:00:00Z");
  while (day <= last) {
    labels.push(day.toISOString().slice(0, 10));
    if (interval === "day") {
      day.setUTCDate(day.getUTCDate() + 1);
    } else if (interval === "week") {
      day.setUTCDate(day.getUTCDate() + 7 - ((day.getUTCDay() + 6) % 7));
    } else {
      day.setUTCMonth(day.getUTCMonth() + 1, 1);
    }
  }
  return labels;
}

function drawChart(endpoint, reports, labels) {
  const titles = reports.length ? reports[0].data.map((m) => m.title) : [];
  // Chat's total is the sum of the bars, which are stacked.
  const shown = endpoint === "chat" ? titles.slice(1) : titles;
  const datasets = shown.map((title, i) => ({
    type: "bar",
    label: title,
    data: reports.map((r) => r.data.find((m) => m.title === title).value),
    backgroundColor: colors[i % colors.length],
    yAxisID: "y",
  }));
  datasets.push({
    type: "line",
    label: "Students who used it",
    data: reports.map((r) => r.numStudentsUsed),
    borderColor: "#1d232a",
    backgroundColor: "#1d232a",
    yAxisID: "students",
  });
  charts[endpoint]?.destroy();
  charts[endpoint] = new Chart($(`${endpoint}-chart`), {
    data: { labels, datasets },
    options: {
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: "index", intersect: false },
      scales: {
        x: { stacked: endpoint === "chat" },
        y: { stacked: endpoint === "chat", beginAtZero: true, title: { display: true, text: "count" } },
        students: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: "students" } },
      },
    },
  });
}

function drawTotals(totals) {
  const tiles = [];
  for (const endpoint of endpoints) {
    const r = totals[endpoint];
    for (const m of r.data) {
      tiles.push({ endpoint, title: m.title, value: m.value });
    }
    tiles.push({ endpoint, title: "Students who used it", value: r.numStudentsUsed });
  }
  $("totals").replaceChildren(
    ...tiles.map((t) => {
      const tile = document.createElement("div");
      tile.className = "tile";
      tile.dataset.endpoint = t.endpoint;
      tile.dataset.title = t.title;
      const value = document.createElement("div");
      value.className = "value";
      value.textContent = t.value.toLocaleString("en-US");
      const label = document.createElement("div");
      label.className = "label";
      label.textContent = `${names[t.endpoint]}: ${t.title}`;
      tile.append(value, label);
      return tile;
    }),
  );
}

// joinStudents puts each student's reports of both endpoints in one row.
function joinStudents(byEndpoint) {
  columns = [];
  const rows = new Map();
  for (const endpoint of endpoints) {
    const reports = byEndpoint[endpoint];
    if (!reports.length) {
      continue;
    }
    const first = columns.length;
    for (const m of reports[0].data) {
      columns.push({ endpoint, title: m.title });
    }
    for (const r of reports) {
      if (!rows.has(r.studentId)) {
        rows.set(r.studentId, { id: r.studentId, name: r.studentName, values: [] });
      }
      const row = rows.get(r.studentId);
      r.data.forEach((m, i) => (row.values[first + i] = m.value));
    }
  }
  students = [...rows.values()];
  for (const s of students) {
    s.values = columns.map((_, i) => s.values[i] || 0);
    s.inactive = s.values.every((v) => v === 0);
  }
}

function drawHeader() {
  const head = document.createElement("tr");
  const titles = ["Student", "ID", ...columns.map((c) => `${names[c.endpoint]}: ${c.title}`)];
  titles.forEach((title, i) => {
    const th = document.createElement("th");
    th.scope = "col";
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = title;
    button.addEventListener("click", () => {
      sort = { column: i, ascending: sort.column === i ? !sort.ascending : true };
      drawRows();
    });
    th.append(button);
    head.append(th);
  });
  $("students").tHead.replaceChildren(head);
}

function drawRows() {
  const query = $("search").value.trim().toLowerCase();
  const inactiveOnly = $("inactive-only").checked;
  let rows = students.filter(
    (s) => (!inactiveOnly || s.inactive) && (!query || s.name.toLowerCase().includes(query) || s.id.toLowerCase().includes(query)),
  );
  if (sort.column >= 0) {
    const key = (s) => (sort.column === 0 ? s.name : sort.column === 1 ? s.id : s.values[sort.column - 2]);
    rows = [...rows].sort((a, b) => {
      const x = key(a);
      const y = key(b);
      const order = typeof x === "number" ? x - y : x.localeCompare(y);
      return sort.ascending ? order : -order;
    });
  }
  [...$("students").tHead.rows[0].cells].forEach((th, i) => {
    th.setAttribute("aria-sort", i === sort.column ? (sort.ascending ? "ascending" : "descending") : "none");
  });
  $("students").tBodies[0].replaceChildren(
    ...rows.map((s) => {
      const tr = document.createElement("tr");
      tr.dataset.id = s.id;
      tr.classList.toggle("inactive", s.inactive);
      const name = document.createElement("td");
      name.textContent = s.name;
      if (s.inactive) {
        const badge = document.createElement("span");
        badge.className = "badge";
        badge.textContent = "inactive";
        name.append(badge);
      }
      const id = document.createElement("td");
      id.textContent = s.id;
      tr.append(name, id, ...s.values.map((v) => Object.assign(document.createElement("td"), { textContent: v })));
      return tr;
    }),
  );
  const inactive = students.filter((s) => s.inactive).length;
  $("row-count").textContent = `Showing ${rows.length} of ${students.length} students (${inactive} inactive)`;
}

function range() {
  return { startDate: $("start").value, endDate: $("end").value };
}

async function load() {
  running?.abort();
  const controller = new AbortController();
  running = controller;
  const period = range();
  const interval = $("interval").value;
  const progress = $("progress");
  let done = 0;
  progress.value = 0;
  progress.hidden = false;
  $("dashboard").setAttribute("aria-busy", "true");
  setStatus("Loading… 0 of 6 reports");
  const ask = async (endpoint, extra) => {
    const resp = await report(endpoint, { ...period, ...extra }, controller.signal);
    const body = await resp.json();
    progress.value = ++done;
    setStatus(`Loading… ${done} of 6 reports`);
    return body.reports;
  };
  try {
    const [series, totals, perStudent] = await Promise.all([
      Promise.all(endpoints.map((e) => ask(e, { interval }))),
      Promise.all(endpoints.map((e) => ask(e, {}))),
      Promise.all(endpoints.map((e) => ask(e, { students: "true" }))),
    ]);
    let labels = periodLabels(period.startDate, period.endDate, interval);
    if (labels.length !== series[0].length) {
      labels = series[0].map((r) => r.startDate.slice(0, 10));
    }
    endpoints.forEach((e, i) => drawChart(e, series[i], labels));
    drawTotals({ "live-lecture": totals[0][0], chat: totals[1][0] });
    joinStudents({ "live-lecture": perStudent[0], chat: perStudent[1] });
    drawHeader();
    drawRows();
    setStatus(`${period.startDate} to ${period.endDate}, by ${interval}`);
    $("dashboard").dataset.loaded = `${period.startDate}/${period.endDate}/${interval}`;
  } catch (err) {
    if (err.name === "AbortError") {
      return;
    }
    if (err.status === 403) {
      sessionStorage.removeItem(keyStore);
      showKeyForm(err.message);
    } else {
      setStatus(err.message || "The service could not be reached.", true);
    }
  } finally {
    if (running === controller) {
      progress.hidden = true;
      $("dashboard").removeAttribute("aria-busy");
    }
  }
}

// download saves an endpoint's CSV answer for the students over the range,
// under the name the service gives it.
async function download(endpoint) {
  try {
    const resp = await report(endpoint, { ...range(), students: "true", format: "csv" });
    const name = /filename="([^"]+)"/.exec(resp.headers.get("Content-Disposition") || "")?.[1] || `${endpoint}.csv`;
    const url = URL.createObjectURL(await resp.blob());
    const a = Object.assign(document.createElement("a"), { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (err) {
    setStatus(err.message, true);
  }
}

function localDate(d) {
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 10);
}

function init() {
  const today = new Date();
  $("end").value = localDate(today);
  $("start").value = localDate(new Date(today.getTime() - 27 * 86400000));
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(keyStore, $("key").value.trim());
    showDashboard();
    load();
  });
  $("query").addEventListener("submit", (ev) => {
    ev.preventDefault();
    load();
  });
  $("sign-out").addEventListener("click", () => {
    running?.abort();
    sessionStorage.removeItem(keyStore);
    showKeyForm("");
  });
  $("search").addEventListener("input", drawRows);
  $("inactive-only").addEventListener("change", drawRows);
  $("download-chat").addEventListener("click", () => download("chat"));
  $("download-live-lecture").addEventListener("click", () => download("live-lecture"));
  if (sessionStorage.getItem(keyStore)) {
    showDashboard();
    load();
  } else {
    showKeyForm("");
  }
}

init();
