// The dashboard: it reads the public report endpoints with the key a
// school or a district enters, which it keeps in this tab's session storage
// only and sends in the x-api-key header, never in a URL; or, for staff
// signed in with their school account, with the session's cookie (which
// the page cannot read) and its CSRF token. A district's key, or a
// district's administrator, opens the district's view (district.js) and,
// from it, each school's.
"use strict";

const keyStore = "groupanalytics-key";

// The key, kept in the tab's session storage; in memory where the browser
// denies the page its storage (one set to keep no site's data, in an
// LMS's frame), so that the page works until it is left.
const keptKey = (() => {
  let inMemory = null;
  const storage = () => {
    try {
      return window.sessionStorage;
    } catch {
      return null;
    }
  };
  return {
    get: () => storage()?.getItem(keyStore) ?? inMemory,
    set(key) {
      inMemory = key;
      storage()?.setItem(keyStore, key);
    },
    remove() {
      inMemory = null;
      storage()?.removeItem(keyStore);
    },
  };
})();
const $ = (id) => document.getElementById(id);
const endpoints = ["live-lecture", "chat"];
const names = { "live-lecture": "Live lecture", chat: "Chat" };
// The series' colours, each at least 3:1 against the card, and each its
// own pattern, so that no series is told apart by colour alone.
const colors = ["#2456a6", "#b45309", "#2e7d32", "#a4377f", "#6c4ab6", "#7d6608", "#00798c"];
const patterns = ["solid", "diagonal", "dots", "horizontal", "vertical", "cross", "backdiagonal"];

let charts = {};
let running = null; // the AbortController of the load under way
let students = []; // the table's rows: {id, name, values, inactive, status, lastUsed, daysSince}
let columns = []; // the table's value columns: {endpoint, title}
let sort = { column: -1, ascending: true }; // -1: the API's order (by name)
let loaded = null; // what the school view shows: {period, interval, labels, series by endpoint}
let page = 0; // the page of the table shown, of pageSize rows
let inactiveAfter = 7; // the school's days without use after which a student has stopped
let minCellSize = 0; // the school's: its reports' figures of fewer students come as null
let firstKeptDay = null; // the first day the school keeps usage of, when it keeps a number of days
let forClasses = false; // the key is a teacher's: it sees its classes, not the school
let classNames = new Map(); // the names of the classes the key may pick, by id
let me = null; // whose key it is (GET /api/me), asked once per key
let districtSchool = null; // the school a district's key opened, {id, name}; null: the district's view
let session = null; // a signed-in person's session, {csrfToken}; null: a key
const roleNames = { teacher: "Teacher", "school-admin": "School administrator", "district-admin": "District administrator" };
const collator = new Intl.Collator("en"); // for sorting names and ids: compare is fast
// pageSize keeps the table's DOM small for a school of 10,000 students.
const pageSize = 200;
// Days are written as the date inputs show them: in the browser's locale.
const dayFormat = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "2-digit", day: "2-digit", timeZone: "UTC" });

// ApiError is an answer other than 200, with what to tell the user.
class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// report asks an endpoint for the reports of params, of the class picked
// if one is.
async function report(endpoint, params, signal) {
  const classId = $("class").value;
  return call("POST", `/api/groups/${endpoint}?${new URLSearchParams(classId ? { ...params, classId } : params)}`, signal);
}

// call sends a request with the key, and returns the answer if it is 200.
// With a district's key in one of its schools, it asks for that school.
async function call(method, path, signal) {
  const key = keptKey.get();
  if (districtSchool) {
    const url = new URL(path, location.origin);
    url.searchParams.set("schoolId", districtSchool.id);
    path = url.pathname + url.search;
  }
  const headers = session ? { "X-CSRF-Token": session.csrfToken } : { "x-api-key": key };
  const resp = await fetch(path, { method, headers, signal });
  if (resp.ok) {
    return resp;
  }
  let message = `The service answered ${resp.status}.`;
  try {
    message = (await resp.json()).error || message;
  } catch {}
  if (resp.status === 403 && session) {
    message = "Your session has ended, or your school's plan has: sign in again.";
  } else if (resp.status === 403 && key?.startsWith("gal_")) {
    message = "Your launch from your course has ended, or your school's plan has: open the tool again from your course.";
  } else if (resp.status === 403) {
    message = "This key was not accepted: it may be mistyped or revoked, or your school's plan may have ended.";
  } else if (resp.status === 429) {
    const wait = resp.headers.get("Retry-After");
    message = `Too many requests: try again in ${wait === "1" ? "1 second" : `${wait || "a few"} seconds`}.`;
  }
  throw new ApiError(resp.status, message);
}

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").classList.toggle("error", Boolean(isError));
}

// forgetSchool clears what the page learnt of a school, its classes and
// its access log: another key, or another school of a district, may see
// other classes and must not see this one's log.
function forgetSchool() {
  delete $("class-picker").dataset.loaded;
  $("access-section").open = false;
  $("access").tBodies[0].replaceChildren();
  delete $("access-section").dataset.loaded;
  $("class-picker").hidden = true;
  $("class").replaceChildren(Object.assign(document.createElement("option"), { value: "", textContent: "Whole school" }));
}

function showKeyForm(message) {
  forgetSchool();
  me = null;
  districtSchool = null;
  $("dashboard").hidden = true;
  session = null;
  $("sign-out").hidden = true;
  $("person").hidden = true;
  $("key-form").hidden = false;
  $("signin-form").hidden = false;
  $("key").value = "";
  showTitle();
  showSkipLinks();
  let note = $("key-error");
  if (!note) {
    note = document.createElement("p");
    note.id = "key-error";
    note.setAttribute("role", "alert");
    note.className = "error";
    $("key-form").append(note);
  }
  note.textContent = message || "";
  // A refused key is marked so, and described by why.
  if (message) {
    $("key").setAttribute("aria-invalid", "true");
    $("key").setAttribute("aria-describedby", "key-error");
  } else {
    $("key").removeAttribute("aria-invalid");
    $("key").removeAttribute("aria-describedby");
  }
  $("key").focus();
}

// showTitle names the view in the browser's title: what it shows, then
// where (the student, the class, the school, its district), then the
// service; the forms' view is the entry's.
function showTitle(student) {
  let parts = ["Your school's or district's usage"];
  if (me && !$("dashboard").hidden) {
    const classId = $("class").value;
    parts = inDistrictView()
      ? [me.district.name]
      : [student?.name, classId ? classNames.get(classId) : "", districtSchool?.name ?? me.school?.name, districtSchool ? me.district.name : ""];
  }
  document.title = [...parts.filter(Boolean), "groupanalytics"].join(" · ");
}

// showSkipLinks offers a skip link to each section the view shows.
function showSkipLinks() {
  for (const link of document.querySelectorAll(".skip-links a[data-section]")) {
    const section = $(link.hash.slice(1)).closest("section, details");
    link.hidden = $("dashboard").hidden || !$("student-view").hidden || section.hidden;
  }
}

// busy marks the parts that a load redraws as busy, or no longer: the
// status line, which says what is happening, stays outside them.
function busy(on) {
  for (const id of ["totals", "school-charts", "students-section", "schools-section", "student-view"]) {
    if (on) {
      $(id).setAttribute("aria-busy", "true");
    } else {
      $(id).removeAttribute("aria-busy");
    }
  }
}

function showDashboard() {
  $("key-form").hidden = true;
  $("signin-form").hidden = true;
  $("dashboard").hidden = false;
  $("sign-out").hidden = false;
  showPerson();
}

// showPerson names in the header who asks, when a person does (a
// signed-in session, or an LTI launch's), and how to leave.
function showPerson() {
  const person = me?.person;
  $("sign-out").textContent = session ? "Sign out" : person ? "Leave" : "Forget key";
  $("person").hidden = !person;
  if (person) {
    $("person").textContent = `${person.name || person.email} · ${roleNames[person.role] || person.role}`;
  }
}

// resumeSession opens the dashboard of the person signed in in this
// browser, if one is; it tells whether one was.
async function resumeSession() {
  const resp = await fetch("/api/me");
  if (!resp.ok) {
    return false;
  }
  me = await resp.json();
  if (!me.person) {
    me = null;
    return false;
  }
  session = { csrfToken: me.csrfToken };
  showDashboard();
  load({ focus: true });
  return true;
}

// signOut ends the session (or forgets the key) and shows the forms.
async function signOut() {
  running?.abort();
  keptKey.remove();
  if (session) {
    await fetch("/signout", { method: "POST", headers: { "X-CSRF-Token": session.csrfToken } }).catch(() => {});
  }
  showKeyForm("");
}

// showDay writes a day (YYYY-MM-DD) in the page's one format.
function showDay(iso) {
  return dayFormat.format(new Date(`${iso}T00:00:00Z`));
}

// showRange writes the days from first to last.
function showRange(first, last) {
  return `${showDay(first)} – ${showDay(last)}`;
}

// daysBetween counts the days from first to last, both included.
function daysBetween(first, last) {
  return Math.round((Date.parse(`${last}T00:00:00Z`) - Date.parse(`${first}T00:00:00Z`)) / 86400000) + 1;
}

// periodNotes tells, period by period, what the chart marks: "so far" for
// a period not over yet (it ends after now), "partial" for a week or month
// that the range cuts, "" for a whole one. starts are the periods' first
// days (the first is the range's), reports the API's reports of them.
function periodNotes(starts, end, interval, reports) {
  const day = (iso) => new Date(`${iso}T00:00:00Z`);
  const wholeStart = (iso) => (interval === "week" ? day(iso).getUTCDay() === 1 : interval === "month" ? iso.endsWith("-01") : true);
  const next = day(end);
  next.setUTCDate(next.getUTCDate() + 1);
  const wholeEnd = interval === "week" ? next.getUTCDay() === 1 : interval === "month" ? next.getUTCDate() === 1 : true;
  return starts.map((start, i) => {
    if (Date.parse(reports[i].endDate) > Date.now()) {
      return "so far";
    }
    const cut = (i === 0 && !wholeStart(start)) || (i === starts.length - 1 && !wholeEnd);
    return cut ? "partial" : "";
  });
}

// rangeNote says when the range is not over yet, so that its totals still grow.
function rangeNote(period) {
  const today = localDate(new Date());
  return period.endDate >= today ? `Today, ${showDay(today)}, is not over yet: its numbers still grow.` : "";
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

// drawChart draws, on the canvas of id, the endpoint's metrics of reports
// as bars (chat's stacked, its total left out: it is their sum) and one
// line over them: {label, data, axis}, axis "y" (counts) or "students".
// A period with a note (periodNotes) is named with it, and the line to it
// dashed, as it is not a whole period. Its legend is a row of buttons
// (drawLegend), its figures a table (drawChartTable).
function drawChart(id, endpoint, reports, { starts, notes }, line) {
  const titles = reports.length ? reports[0].data.map((m) => m.title) : [];
  const shown = endpoint === "chat" ? titles.slice(1) : titles;
  const labels = starts.map((start, i) => (notes[i] ? [showDay(start), `(${notes[i]})`] : showDay(start)));
  const datasets = shown.map((title, i) => ({
    type: "bar",
    label: title,
    data: reports.map((r) => value(r, title)),
    backgroundColor: fill(i),
    // A white edge between stacked segments.
    borderColor: "#fff",
    borderWidth: { top: 1 },
    yAxisID: "y",
    order: 1,
  }));
  // A lower order is drawn later: the line stays on top of the bars.
  datasets.push({
    type: "line",
    label: line.label,
    data: line.data,
    borderColor: "#1d232a",
    backgroundColor: "#1d232a",
    // Dashed into and out of a period that is not whole: the first as the last.
    segment: { borderDash: (ctx) => (notes[ctx.p0DataIndex] || notes[ctx.p1DataIndex] ? [6, 4] : undefined) },
    yAxisID: line.axis,
    order: 0,
  });
  const stacked = endpoint === "chat";
  const scales = {
    x: { stacked },
    y: { stacked, beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "count" } },
  };
  if (line.axis === "students") {
    scales.students = {
      position: "right",
      beginAtZero: true,
      ticks: { precision: 0 },
      grid: { drawOnChartArea: false },
      title: { display: true, text: "students" },
    };
  }
  charts[id]?.destroy();
  charts[id] = new Chart($(id), {
    data: { labels, datasets },
    options: {
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: "index", intersect: false },
      scales,
      // The legend is the page's own, of buttons (drawLegend).
      plugins: { legend: { display: false } },
    },
  });
  drawLegend(id, datasets);
  drawChartTable(id, starts, notes, datasets);
}

// fillCache keeps each series' pattern, made once.
const fillCache = new Map();

// fill is the ith series' colour with its pattern drawn over it in white:
// solid, stripes one way or the other, dots, lines across or down, a
// cross. Its tile (a canvas) draws the legend's swatch too.
function fill(i) {
  const color = colors[i % colors.length];
  const kind = patterns[i % patterns.length];
  if (!fillCache.has(i)) {
    const tile = Object.assign(document.createElement("canvas"), { width: 10, height: 10 });
    const c = tile.getContext("2d");
    c.fillStyle = color;
    c.fillRect(0, 0, 10, 10);
    c.strokeStyle = c.fillStyle = "rgba(255, 255, 255, 0.85)";
    c.lineWidth = 2;
    const stroke = (...xy) => {
      c.beginPath();
      c.moveTo(xy[0], xy[1]);
      c.lineTo(xy[2], xy[3]);
      c.stroke();
    };
    if (kind === "diagonal") {
      stroke(0, 10, 10, 0);
      stroke(-5, 5, 5, -5);
      stroke(5, 15, 15, 5);
    } else if (kind === "backdiagonal") {
      stroke(0, 0, 10, 10);
      stroke(-5, 5, 5, 15);
      stroke(5, -5, 15, 5);
    } else if (kind === "dots") {
      c.beginPath();
      c.arc(5, 5, 1.8, 0, 2 * Math.PI);
      c.fill();
    } else if (kind === "horizontal") {
      stroke(0, 5, 10, 5);
    } else if (kind === "vertical") {
      stroke(5, 0, 5, 10);
    } else if (kind === "cross") {
      stroke(0, 5, 10, 5);
      stroke(5, 0, 5, 10);
    }
    fillCache.set(i, { tile, pattern: c.createPattern(tile, "repeat") });
  }
  return fillCache.get(i).pattern;
}

// drawLegend writes the chart's legend as buttons that hide and show its
// series, from the keyboard as from the pointer.
function drawLegend(id, datasets) {
  const chart = charts[id];
  $(`${id}-legend`).replaceChildren(
    ...datasets.map((d, i) => {
      const swatch = Object.assign(document.createElement("span"), { className: d.type === "line" ? "swatch line" : "swatch" });
      swatch.setAttribute("aria-hidden", "true");
      if (d.type !== "line") {
        swatch.style.backgroundImage = `url(${fillCache.get(i).tile.toDataURL()})`;
      }
      const button = Object.assign(document.createElement("button"), { type: "button" });
      button.setAttribute("aria-pressed", "true");
      button.append(swatch, d.label);
      button.addEventListener("click", () => {
        const visible = !chart.isDatasetVisible(i);
        chart.setDatasetVisibility(i, visible);
        chart.update();
        button.setAttribute("aria-pressed", String(visible));
      });
      return button;
    }),
  );
}

// drawChartTable writes the chart's figures as a table: a row a period
// (with its note), a column a series.
function drawChartTable(id, starts, notes, datasets) {
  const table = $(`${id}-table`);
  const head = document.createElement("tr");
  for (const title of ["Period", ...datasets.map((d) => d.label)]) {
    head.append(Object.assign(document.createElement("th"), { scope: "col", textContent: title }));
  }
  table.tHead.replaceChildren(head);
  table.tBodies[0].replaceChildren(
    ...starts.map((start, p) => {
      const tr = document.createElement("tr");
      const period = notes[p] ? `${showDay(start)} (${notes[p]})` : showDay(start);
      tr.append(Object.assign(document.createElement("th"), { scope: "row", textContent: period }));
      for (const d of datasets) {
        const v = d.data[p];
        tr.append(Object.assign(document.createElement("td"), { textContent: v === null || v === undefined ? "hidden" : showNumber(v) }));
      }
      return tr;
    }),
  );
}

// showNumber writes a figure as the tables do: thousands separated, an
// average to a tenth.
function showNumber(n) {
  return n.toLocaleString("en-US", { maximumFractionDigits: 1 });
}

// narrow tells whether the page is laid out for a phone (style.css's breakpoint).
function narrow() {
  return matchMedia("(max-width: 760px)").matches;
}

// value is the value of the metric titled title in report r.
function value(r, title) {
  return r.data.find((m) => m.title === title).value;
}

// averagePerStudent is the average per student who used the endpoint in
// the period, to a tenth: 0 when nobody did, null when either
// figure is hidden.
function averagePerStudent(total, students) {
  if (total === null || students === null) {
    return null;
  }
  return students ? Math.round((total / students) * 10) / 10 : 0;
}

// showCount writes a count, or "hidden" for a figure the school's
// minCellSize hides.
function showCount(n) {
  return n === null ? "hidden" : n.toLocaleString("en-US");
}

// hiddenNote says why a figure is hidden: the school's minCellSize, or in
// a district's view, a school's.
function hiddenNote() {
  const few = minCellSize ? `fewer than ${minCellSize} students` : "fewer students than a school's minimum";
  return `Hidden: ${few} make it, or it would tell what such a figure is.`;
}

// previousRange is the range of the same number of days just before
// period.
function previousRange(period) {
  const day = 86400000;
  const start = Date.parse(`${period.startDate}T00:00:00Z`);
  const end = Date.parse(`${period.endDate}T00:00:00Z`);
  const iso = (t) => new Date(t).toISOString().slice(0, 10);
  return { startDate: iso(start - (end - start) - day), endDate: iso(start - day) };
}

// change tells how now compares with before, as [text, trend]: "▲ 12%"
// or "new" (from nothing) going "up", "▼ 5%" going "down", "no change";
// "not compared" when either is hidden.
function change(now, before) {
  if (now === null || before === null) {
    return ["not compared", ""];
  }
  if (before === 0) {
    return now === 0 ? ["no change", ""] : ["new", "up"];
  }
  const percent = Math.round(((now - before) / before) * 100);
  if (percent === 0) {
    return ["no change", ""];
  }
  return percent > 0 ? [`▲ ${percent}%`, "up"] : [`▼ ${-percent}%`, "down"];
}

// drawTotals shows each metric over the range, and the students who used
// each endpoint, with the change against the range just before, which a
// caption names, or why there is none (uncompared).
function drawTotals(totals, before, period, previous, uncompared) {
  const days = daysBetween(period.startDate, period.endDate);
  const versus = `vs ${days === 1 ? "the day" : `${days.toLocaleString("en-US")} days`} before`;
  const hiding = minCellSize ? `Figures of fewer than ${minCellSize} students are hidden.` : "";
  const comparison = before[endpoints[0]]
    ? `Each change is ${versus}: ${showRange(previous.startDate, previous.endDate)}.`
    : `Not compared with the days before: ${uncompared}`;
  $("totals-caption").textContent = `${comparison} ${rangeNote(period)} ${hiding}`.trim();
  const tiles = [];
  for (const endpoint of endpoints) {
    const r = totals[endpoint];
    const b = before[endpoint];
    r.data.forEach((m, i) => tiles.push({ endpoint, title: m.title, value: m.value, before: b ? b.data[i].value : undefined }));
    tiles.push({ endpoint, title: "Students who used it", value: r.numStudentsUsed, before: b ? b.numStudentsUsed : undefined });
  }
  $("totals").replaceChildren(
    ...tiles.map((t) => {
      const tile = document.createElement("div");
      tile.className = "tile";
      tile.dataset.endpoint = t.endpoint;
      tile.dataset.title = t.title;
      const value = document.createElement("div");
      value.className = "value";
      value.textContent = showCount(t.value);
      if (t.value === null) {
        tile.classList.add("hidden-figure");
        tile.title = hiddenNote();
      }
      const label = document.createElement("div");
      label.className = "label";
      label.textContent = `${names[t.endpoint]}: ${t.title}`;
      tile.append(value, label);
      if (t.before === undefined) {
        return tile; // not compared: the days before are not kept
      }
      const delta = document.createElement("div");
      const [text, trend] = change(t.value, t.before);
      delta.className = `change ${trend}`;
      delta.textContent = text;
      const compared = Object.assign(document.createElement("span"), { className: "versus", textContent: ` ${versus}` });
      delta.append(compared);
      delta.title = `${showCount(t.before)} in ${showRange(previous.startDate, previous.endDate)}`;
      tile.append(delta);
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

// statusRank orders the statuses as the list of who stopped does: those
// most in need of a word first.
const statusRank = { never: 0, stopped: 1, active: 2 };

// joinLastUse adds to each row its student's last day of use and status,
// from GET /api/last-use.
function joinLastUse(list) {
  const byId = new Map(list.students.map((u) => [u.studentId, u]));
  for (const s of students) {
    const u = byId.get(s.id);
    s.status = u ? u.status : "never";
    s.lastUsed = u ? u.lastUsed : null;
    s.daysSince = u ? u.daysSince : null;
  }
  inactiveAfter = list.inactiveAfter;
}

function drawHeader() {
  const head = document.createElement("tr");
  const titles = ["Student", "ID", "Last used", "Status", ...columns.map((c) => `${names[c.endpoint]}: ${c.title}`)];
  titles.forEach((title, i) => {
    const th = document.createElement("th");
    th.scope = "col";
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = title;
    button.addEventListener("click", () => {
      sort = { column: i, ascending: sort.column === i ? !sort.ascending : true };
      drawFirstPage();
    });
    th.append(button);
    head.append(th);
  });
  $("students").tHead.replaceChildren(head);
}

function drawRows() {
  const query = $("search").value.trim().toLowerCase();
  const inactiveOnly = $("inactive-only").checked;
  const stoppedOnly = $("stopped-only").checked;
  let rows = students.filter(
    (s) =>
      (!inactiveOnly || s.inactive) &&
      (!stoppedOnly || s.status === "stopped") &&
      (!query || s.name.toLowerCase().includes(query) || s.id.toLowerCase().includes(query)),
  );
  if (sort.column >= 0) {
    const keys = [(s) => s.name, (s) => s.id, (s) => s.lastUsed || "", (s) => statusRank[s.status]];
    const key = (s) => (sort.column < keys.length ? keys[sort.column](s) : s.values[sort.column - keys.length]);
    rows = [...rows].sort((a, b) => {
      const x = key(a);
      const y = key(b);
      const order = typeof x === "number" ? x - y : collator.compare(x, y);
      return sort.ascending ? order : -order;
    });
  }
  [...$("students").tHead.rows[0].cells].forEach((th, i) => {
    th.setAttribute("aria-sort", i === sort.column ? (sort.ascending ? "ascending" : "descending") : "none");
  });
  const pages = Math.max(1, Math.ceil(rows.length / pageSize));
  page = Math.min(page, pages - 1);
  const first = page * pageSize;
  $("pager").hidden = pages === 1;
  $("previous-page").disabled = page === 0;
  $("next-page").disabled = page === pages - 1;
  $("page-label").textContent = `Rows ${first + 1}–${Math.min(first + pageSize, rows.length)}, page ${page + 1} of ${pages}`;
  $("students").tBodies[0].replaceChildren(
    ...rows.slice(first, first + pageSize).map((s) => {
      const tr = document.createElement("tr");
      tr.dataset.id = s.id;
      tr.classList.toggle("inactive", s.inactive);
      const name = document.createElement("td");
      const open = Object.assign(document.createElement("button"), { type: "button", className: "student", textContent: s.name });
      open.addEventListener("click", () => openStudent(s));
      name.append(open);
      if (s.inactive) {
        const badge = document.createElement("span");
        badge.className = "badge";
        badge.textContent = "inactive";
        name.append(badge);
      }
      // The id under the name, for a phone, where the pinned name is
      // all that stays in view and two students may share it.
      name.append(Object.assign(document.createElement("span"), { className: "sid", textContent: s.id }));
      const id = document.createElement("td");
      id.textContent = s.id;
      const lastUsed = Object.assign(document.createElement("td"), { className: "last-used", textContent: s.lastUsed ? showDay(s.lastUsed) : "never" });
      if (s.daysSince !== null) {
        lastUsed.title = s.daysSince === 0 ? "today" : `${s.daysSince.toLocaleString("en-US")} day${s.daysSince === 1 ? "" : "s"} ago`;
      }
      const status = Object.assign(document.createElement("td"), { className: `use-status ${s.status}`, textContent: s.status });
      if (s.status === "stopped") {
        status.title = `used it before, not in the last ${inactiveAfter} day${inactiveAfter === 1 ? "" : "s"}`;
      }
      tr.append(name, id, lastUsed, status, ...s.values.map((v) => Object.assign(document.createElement("td"), { textContent: v })));
      return tr;
    }),
  );
  const inactive = students.filter((s) => s.inactive).length;
  const stopped = students.filter((s) => s.status === "stopped").length;
  const count = (n) => n.toLocaleString("en-US");
  $("row-count").textContent = `Showing ${count(rows.length)} of ${count(students.length)} students (${count(inactive)} inactive, ${count(stopped)} stopped)`;
}

// drawFirstPage shows the table from its first page, for a new order or
// filter.
function drawFirstPage() {
  page = 0;
  drawRows();
}

// showPeriod says on the status line what the school view shows.
function showPeriod({ period, interval }) {
  const picked = $("class").selectedOptions[0];
  const of = $("class").value ? `${picked.textContent}: ` : "";
  setStatus(`${of}${showRange(period.startDate, period.endDate)}, by ${interval}`);
}

function range() {
  return { startDate: $("start").value, endDate: $("end").value };
}

// loadClasses fills the class picker with the classes the key may ask
// for (a teacher's key: its own, together by default), once per key; it
// stays hidden when there are none.
async function loadClasses() {
  if ($("class-picker").dataset.loaded) {
    return;
  }
  const answer = await (await call("GET", "/api/classes")).json();
  const { classes } = answer;
  forClasses = answer.forClasses;
  classNames = new Map(classes.map((c) => [c.id, c.name]));
  minCellSize = answer.minCellSize;
  firstKeptDay = answer.firstKeptDay;
  // Days before it are deleted: the service refuses them.
  $("start").min = firstKeptDay ?? "";
  $("end").min = firstKeptDay ?? "";
  const options = classes.map((c) =>
    Object.assign(document.createElement("option"), { value: c.id, textContent: `${c.name} (${c.students.toLocaleString("en-US")} students)` }),
  );
  const whole = Object.assign(document.createElement("option"), { value: "", textContent: forClasses ? "All your classes" : "Whole school" });
  $("class").replaceChildren(whole, ...options);
  $("class-picker").hidden = classes.length === 0;
  // A teacher's key may not read whom the school asked about.
  $("access-section").hidden = forClasses;
  $("class-picker").dataset.loaded = "true";
}

// load shows what the key opens over the range: a district's view, or a
// school's, counting its requests on the progress bar; the status line
// says it is loading, once, and then what it shows. With focus, a new
// view, it moves focus to the view's heading when it is shown (or to the
// section of that id, in a school's view).
async function load({ focus } = {}) {
  showStudentView(false);
  delete $("dashboard").dataset.loaded;
  running?.abort();
  const controller = new AbortController();
  running = controller;
  const progress = $("progress");
  let done = 0;
  progress.value = 0;
  progress.hidden = false;
  busy(true);
  const asked = 8;
  setStatus(`Loading ${asked} reports…`);
  const loading = {
    signal: controller.signal,
    // tick counts n requests done, or not made.
    tick(n = 1) {
      done += n;
      progress.value = done;
    },
  };
  try {
    // One request first: a mistyped key fails once, not eight times, so
    // that typing it again does not run into the failed-key limit.
    if (!me) {
      me = await (await call("GET", "/api/me", controller.signal)).json();
    }
    showPlace();
    showPerson();
    await (inDistrictView() ? loadDistrict(loading) : loadSchool(loading));
    showTitle();
    if (focus) {
      $(typeof focus === "string" && !inDistrictView() ? focus : "place-name").focus();
    }
  } catch (err) {
    if (err.name === "AbortError") {
      return;
    }
    if (err.status === 403) {
      keptKey.remove();
      showKeyForm(err.message);
    } else {
      setStatus(err.message || "The service could not be reached.", true);
    }
  } finally {
    if (running === controller) {
      progress.hidden = true;
      busy(false);
    }
  }
}

// inDistrictView tells whether the page shows a district, rather than a
// school (of its own key, or one the district's key opened).
function inDistrictView() {
  return me?.kind === "district" && !districtSchool;
}

// showPlace names what the page shows, and offers a way back to the
// district from one of its schools.
function showPlace() {
  const school = districtSchool?.name ?? me.school?.name;
  $("place-name").textContent = me.kind !== "district" ? school : districtSchool ? `${me.district.name} › ${school}` : me.district.name;
  $("district-back").hidden = !districtSchool;
  $("schools-section").hidden = !inDistrictView();
  $("students-section").hidden = inDistrictView();
  showTitle();
  showSkipLinks();
}

// loadSchool shows the school view: its totals against the days before,
// its charts and its students' table.
async function loadSchool(loading) {
  // Its first request tells the first day the school keeps: no earlier
  // one is asked.
  await loadClasses();
  if (firstKeptDay && $("start").value < firstKeptDay) {
    $("start").value = firstKeptDay;
  }
  const period = range();
  const interval = $("interval").value;
  const ask = async (endpoint, extra) => {
    const body = await (await report(endpoint, { ...period, ...extra }, loading.signal)).json();
    loading.tick();
    return body.reports;
  };
  const previous = previousRange(period);
  // The days just before may be deleted already (the school's retention):
  // then nothing is compared.
  const compared = !firstKeptDay || previous.startDate >= firstKeptDay;
  if (!compared) {
    loading.tick(endpoints.length); // the requests of the days before, not made
  }
  const classId = $("class").value;
  const [totals, series, perStudent, before, uses] = await Promise.all([
    Promise.all(endpoints.map((e) => ask(e, {}))),
    Promise.all(endpoints.map((e) => ask(e, { interval }))),
    Promise.all(endpoints.map((e) => ask(e, { students: "true" }))),
    compared ? Promise.all(endpoints.map((e) => ask(e, previous))) : [[null], [null]],
    call("GET", `/api/last-use${classId ? `?${new URLSearchParams({ classId })}` : ""}`, loading.signal).then((r) => r.json()),
  ]);
  const axis = drawSeries(period, interval, series);
  const schoolTotals = { "live-lecture": totals[0][0], chat: totals[1][0] };
  loaded = { period, interval, axis, totals: schoolTotals, series: { "live-lecture": series[0], chat: series[1] } };
  const uncompared = compared ? "" : `the school keeps its usage from ${showDay(firstKeptDay)} on.`;
  drawTotals(schoolTotals, { "live-lecture": before[0][0], chat: before[1][0] }, period, previous, uncompared);
  $("table-note").textContent = rangeNote(period);
  joinStudents({ "live-lecture": perStudent[0], chat: perStudent[1] });
  joinLastUse(uses);
  drawHeader();
  drawFirstPage();
  showPeriod(loaded);
  $("dashboard").dataset.loaded = [period.startDate, period.endDate, interval, $("class").value].filter(Boolean).join("/");
}

// drawSeries draws both endpoints' charts of the interval reports
// (series, by endpoint as endpoints orders them) with the students who
// used each, and returns their axis: the periods' first days and notes.
function drawSeries(period, interval, series) {
  let starts = periodLabels(period.startDate, period.endDate, interval);
  if (starts.length !== series[0].length) {
    starts = series[0].map((r) => r.startDate.slice(0, 10));
  }
  const axis = { starts, notes: periodNotes(starts, period.endDate, interval, series[0]) };
  endpoints.forEach((e, i) =>
    drawChart(`${e}-chart`, e, series[i], axis, {
      label: "Students who used it",
      data: series[i].map((r) => r.numStudentsUsed),
      axis: "students",
    }),
  );
  for (const note of document.querySelectorAll(".partial-note")) {
    note.hidden = !axis.notes.some(Boolean);
  }
  return axis;
}

// showStudentView shows a student's page in place of the school's, or the
// school's again.
function showStudentView(show) {
  $("student-view").hidden = !show;
  for (const id of ["totals-caption", "totals", "school-charts"]) {
    $(id).hidden = show;
  }
  $("students-section").hidden = show || inDistrictView();
  $("schools-section").hidden = show || !inDistrictView();
  if (!show) {
    delete $("student-view").dataset.loaded;
  }
  showSkipLinks();
}

// comparedWith names what the school view shows, which a student's page
// compares with: the class picked ("Biology 7B"), a teacher's classes
// together, or the school.
function comparedWith() {
  const classId = $("class").value;
  if (classId) {
    const name = classNames.get(classId);
    return { name, the: name, whose: `${name}'s` };
  }
  return forClasses
    ? { name: "Your classes'", the: "your classes", whose: "your classes'" }
    : { name: "School", the: "the school", whose: "the school's" };
}

// openStudent shows one student's usage of both endpoints over the range
// and interval of the school view, beside the average per student who used
// the endpoint (its first metric) of what that view shows: the class picked,
// or the school.
async function openStudent(student) {
  running?.abort();
  const controller = new AbortController();
  running = controller;
  const { period, interval, axis, totals, series } = loaded;
  const versus = comparedWith();
  $("student-heading").textContent = `${student.name} (${student.id})`;
  $("student-back").textContent = `Back to ${versus.the}`;
  $("student-note").textContent =
    `Totals over the range, and in the charts by period: this student's usage (bars) beside ${versus.whose} average ` +
    "per student who used the endpoint (the line).";
  showStudentView(true);
  setStatus(`Loading ${student.name}…`);
  try {
    const reports = await Promise.all(
      endpoints.map(async (e) => {
        const resp = await report(e, { ...period, interval, students: "true", studentId: student.id }, controller.signal);
        return (await resp.json()).reports;
      }),
    );
    endpoints.forEach((e, i) => {
      const headline = series[e].length ? series[e][0].data[0].title : "";
      drawChart(`student-${e}-chart`, e, reports[i], axis, {
        label: `${versus.name} average: ${headline}`,
        data: series[e].map((r) => averagePerStudent(value(r, headline), r.numStudentsUsed)),
        axis: "y",
      });
    });
    drawStudentTotals(reports, totals, versus.name);
    setStatus(`${student.name}: ${showRange(period.startDate, period.endDate)}, by ${interval}`);
    $("student-view").dataset.loaded = student.id;
    showTitle(student);
    $("student-heading").focus();
  } catch (err) {
    if (err.name !== "AbortError") {
      setStatus(err.message || "The service could not be reached.", true);
    }
  }
}

// drawStudentTotals shows the student's total of each metric over the
// range (the sum of their periods' reports, which cut the range whole)
// beside the average per student who used the endpoint of what the school
// view shows (totals), named by name.
function drawStudentTotals(reports, totals, name) {
  const tiles = [];
  endpoints.forEach((endpoint, i) => {
    const school = totals[endpoint];
    school.data.forEach((m, j) => {
      const mine = reports[i].reduce((sum, r) => sum + r.data[j].value, 0);
      const tile = Object.assign(document.createElement("div"), { className: "tile" });
      tile.dataset.endpoint = endpoint;
      tile.dataset.title = m.title;
      tile.append(
        Object.assign(document.createElement("div"), { className: "value", textContent: mine.toLocaleString("en-US") }),
        Object.assign(document.createElement("div"), { className: "label", textContent: `${names[endpoint]}: ${m.title}` }),
        Object.assign(document.createElement("div"), {
          className: "average",
          textContent: `${name} average ${showCount(averagePerStudent(m.value, school.numStudentsUsed))}`,
        }),
      );
      tiles.push(tile);
    });
  });
  $("student-totals").replaceChildren(...tiles);
}

// download saves a CSV answer (asked by ask) under the name the service
// gives it.
async function download(ask) {
  try {
    const resp = await ask();
    const name = /filename="([^"]+)"/.exec(resp.headers.get("Content-Disposition") || "")?.[1] || "groupanalytics.csv";
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

// accessBefore asks for the access log's next page; null: from the newest.
let accessBefore = null;

// loadAccess shows the school's access log: its newest page, or with more,
// the page after those shown.
async function loadAccess(more) {
  const body = $("access").tBodies[0];
  if (!more) {
    accessBefore = null;
    body.replaceChildren();
    delete $("access-section").dataset.loaded;
  }
  const params = new URLSearchParams({ limit: "50" });
  if (accessBefore !== null) {
    params.set("before", accessBefore);
  }
  try {
    const page = await (await call("GET", `/api/access-log?${params}`)).json();
    for (const e of page.entries) {
      const what = `${names[e.endpoint.split("/").pop()] || e.endpoint}, ${e.format.toUpperCase()}${e.interval === "none" ? "" : `, by ${e.interval}`}`;
      let students = e.studentIds.join(", ");
      if (e.allStudents) {
        students = e.classIds.length ? `all of ${e.classIds.join(", ")}` : "all";
      } else if (e.erasedStudents) {
        students = `${students}${students ? ", " : ""}${e.erasedStudents} erased since`;
      }
      const row = document.createElement("tr");
      // Each cell names its column, for the phone's stacked rows.
      const labels = [...$("access").tHead.rows[0].cells].map((th) => th.textContent);
      for (const [i, [text, title]] of [
        [new Date(e.at).toLocaleString(), e.at],
        e.person
          ? [`${e.person.email} (${roleNames[e.person.role] || e.person.role})`, `signed in with ${e.person.provider}`]
          : [(e.key.label || e.key.prefix) + (e.key.district ? ` (district ${e.key.district})` : ""), `${e.key.prefix}… (${e.key.id})`],
        [e.client],
        [what],
        [showRange(e.startDate, e.endDate)],
        [students],
      ].entries()) {
        const td = Object.assign(document.createElement("td"), { textContent: text, title: title || "" });
        td.dataset.label = labels[i];
        row.append(td);
      }
      body.append(row);
    }
    accessBefore = page.next;
    $("access-more").hidden = page.next === null;
    $("access-section").dataset.loaded = String(body.rows.length);
  } catch (err) {
    setStatus(err.message, true);
  }
}

async function init() {
  const today = new Date();
  $("end").value = localDate(today);
  $("start").value = localDate(new Date(today.getTime() - 27 * 86400000));
  // A link may name the range and interval (the weekly digest's does).
  const linked = new URLSearchParams(location.search);
  for (const [param, id] of [["startDate", "start"], ["endDate", "end"]]) {
    if (/^\d{4}-\d{2}-\d{2}$/.test(linked.get(param) ?? "")) {
      $(id).value = linked.get(param);
    }
  }
  if (["day", "week", "month"].includes(linked.get("interval"))) {
    $("interval").value = linked.get("interval");
  }
  // A link may open on the students who stopped (a link placed in an
  // LMS's course does, its launch's page says so).
  const launched = document.querySelector('meta[name="groupanalytics-session"]');
  const stoppedView = (launched?.dataset.view ?? linked.get("view")) === "stopped";
  $("stopped-only").checked = stoppedView;
  $("key-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    keptKey.set($("key").value.trim());
    showDashboard();
    load({ focus: true });
  });
  // Sign-in goes to the provider by redirects, which the page's policy
  // (form-action 'self') would stop after a form's submission: it is a
  // navigation instead.
  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    location.assign(`/signin?${new URLSearchParams(new FormData($("signin-form")))}`);
  });
  $("query").addEventListener("submit", (ev) => {
    ev.preventDefault();
    load();
  });
  $("class").addEventListener("change", load);
  $("sign-out").addEventListener("click", signOut);
  // Back to the school: focus returns to the student's name it came from.
  $("student-back").addEventListener("click", () => {
    const from = $("student-view").dataset.loaded;
    showStudentView(false);
    showPeriod(loaded);
    showTitle();
    $("students").querySelector(`tr[data-id="${CSS.escape(from ?? "")}"] button.student`)?.focus();
  });
  $("search").addEventListener("input", drawFirstPage);
  $("inactive-only").addEventListener("change", drawFirstPage);
  $("stopped-only").addEventListener("change", drawFirstPage);
  $("previous-page").addEventListener("click", () => {
    page--;
    drawRows();
  });
  $("next-page").addEventListener("click", () => {
    page++;
    drawRows();
  });
  $("access-section").addEventListener("toggle", () => $("access-section").open && loadAccess(false));
  $("access-more").addEventListener("click", () => loadAccess(true));
  for (const endpoint of endpoints) {
    // The students over the range.
    $(`download-${endpoint}`).addEventListener("click", () => download(() => report(endpoint, { ...range(), students: "true", format: "csv" })));
  }
  $("download-adoption").addEventListener("click", () => download(() => call("GET", `/api/adoption?${new URLSearchParams({ ...range(), format: "csv" })}`)));
  $("school-search").addEventListener("input", drawSchools);
  $("district-back").addEventListener("click", () => openSchool(null));
  // An LTI launch's page carries its session's token: kept in this tab
  // as its key (no cookie needed in the LMS's frame), the page's address
  // made the dashboard's, so that a reload does not post the launch again.
  if (launched) {
    let token = launched.content;
    // A launch in a browser that keeps no cookie of the tool here: its
    // token is sealed, opened by what its login kept in the LMS's storage.
    if (launched.dataset.sealed) {
      try {
        token = await ltiUnseal(launched.dataset);
      } catch (err) {
        launched.remove();
        history.replaceState(null, "", "/");
        showKeyForm(`This launch could not be confirmed: ${err.message}. Open the tool again from your course.`);
        return;
      }
    }
    keptKey.set(token);
    launched.remove();
    history.replaceState(null, "", stoppedView ? "/?view=stopped" : "/");
  }
  if (keptKey.get()) {
    showDashboard();
    load({ focus: stoppedView ? "students-section" : Boolean(launched) });
  } else if (!(await resumeSession().catch(() => false))) {
    showKeyForm("");
  }
}

init();
