// The district's view: its totals against the days before, its charts, and
// its schools side by side (GET /api/adoption), the lowest share of
// students who used the service first. A school's name opens that school's
// view as its own key would see it: app.js then asks with its schoolId.
"use strict";

let schools = []; // the schools table's rows: adoption rows, each with usedBefore
let schoolsTotal = null; // the district's adoption row, as a last row
let schoolSort = { field: "shareUsed", ascending: true };

// schoolColumns are the schools table's columns: the adoption field each
// shows (a share as a percentage), the share used first, where a phone
// shows it beside the name.
const schoolColumns = [
  { field: "schoolName", title: "School" },
  { field: "shareUsed", title: "Share used", share: true },
  { field: "usedEither", title: "Used either" },
  { field: "enrolled", title: "Enrolled" },
  { field: "change", title: "Change in used" },
  { field: "seats", title: "Seats" },
  { field: "seatsUsedShare", title: "Share of seats", share: true },
  { field: "usedLiveLecture", title: "Used live lectures" },
  { field: "usedChat", title: "Used chat" },
];

// loadDistrict shows the district's view over the range: eight requests,
// the reports of both endpoints over the range, by interval and over the
// days before, and the adoption of the range and of the days before.
async function loadDistrict(loading) {
  // A district has no classes, no access log and no first kept day of
  // its own: a school's are in its view.
  minCellSize = 0;
  firstKeptDay = null;
  forClasses = false;
  $("start").min = "";
  $("end").min = "";
  $("class-picker").hidden = true;
  $("access-section").hidden = true;
  const period = range();
  const interval = $("interval").value;
  const previous = previousRange(period);
  const read = async (answer) => {
    const body = await (await answer).json();
    loading.tick();
    return body;
  };
  const ask = (endpoint, params) => read(report(endpoint, params, loading.signal));
  const adoption = (params) => read(call("GET", `/api/adoption?${new URLSearchParams(params)}`, loading.signal));
  // The days before may reach before the first day a school keeps: then
  // they are not compared, and the service's answer says why.
  let uncompared = "";
  const before = (answer) =>
    answer.catch((err) => {
      if (err.status !== 400) {
        throw err;
      }
      uncompared = err.message.replace(/^Invalid \w+: /, "");
      loading.tick();
      return null;
    });
  const [totals, series, earlier, now, then] = await Promise.all([
    Promise.all(endpoints.map((e) => ask(e, period))),
    Promise.all(endpoints.map((e) => ask(e, { ...period, interval }))),
    Promise.all(endpoints.map((e) => before(ask(e, previous)))),
    adoption(period),
    before(adoption(previous)),
  ]);
  drawSeries(period, interval, series.map((body) => body.reports));
  const compared = earlier.every(Boolean) && then !== null;
  const firstReports = (bodies) => Object.fromEntries(endpoints.map((e, i) => [e, bodies[i]?.reports[0] ?? null]));
  drawTotals(firstReports(totals), firstReports(compared ? earlier : []), period, previous, `${uncompared}.`);
  const usedBefore = new Map((then?.schools ?? []).map((a) => [a.schoolId, a.usedEither]));
  schools = now.schools.map((a) => ({ ...a, usedBefore: compared ? (usedBefore.get(a.schoolId) ?? null) : undefined }));
  schoolsTotal = { ...now.total, schoolName: "All schools", usedBefore: compared ? then.total.usedEither : undefined };
  const leftOut = now.schoolsLeftOut.map((s) => `${s.schoolName} (${s.reason})`).join(", ");
  $("schools-note").textContent = [
    "Lowest share used first: click a heading to sort by it, a school's name to open its view.",
    leftOut ? `Left out of every figure here: ${leftOut}.` : "",
    rangeNote(period),
  ]
    .filter(Boolean)
    .join(" ");
  drawSchoolsHeader();
  drawSchools();
  setStatus(`${me.district.name}: ${showRange(period.startDate, period.endDate)}, by ${interval}`);
  $("dashboard").dataset.loaded = [period.startDate, period.endDate, interval].join("/");
}

function drawSchoolsHeader() {
  const head = document.createElement("tr");
  for (const column of schoolColumns) {
    const th = Object.assign(document.createElement("th"), { scope: "col" });
    th.dataset.field = column.field;
    const button = Object.assign(document.createElement("button"), { type: "button", textContent: column.title });
    button.addEventListener("click", () => {
      schoolSort = { field: column.field, ascending: schoolSort.field === column.field ? !schoolSort.ascending : true };
      drawSchools();
    });
    th.append(button);
    head.append(th);
  }
  $("schools").tHead.replaceChildren(head);
}

// schoolSortValue is what a row sorts by in the column of field: null
// (hidden, or not said) sorts last either way.
function schoolSortValue(row, field) {
  if (field !== "change") {
    return row[field] ?? null;
  }
  if (row.usedEither === null || row.usedBefore == null) {
    return null;
  }
  return row.usedBefore === 0 ? (row.usedEither === 0 ? 0 : Infinity) : row.usedEither / row.usedBefore - 1;
}

// drawSchools shows the schools the search finds, in the order asked,
// and the district's total under them.
function drawSchools() {
  const query = $("school-search").value.trim().toLowerCase();
  const { field, ascending } = schoolSort;
  const rows = schools
    .filter((s) => !query || s.schoolName.toLowerCase().includes(query) || s.schoolId.toLowerCase().includes(query))
    .sort((a, b) => {
      const x = schoolSortValue(a, field);
      const y = schoolSortValue(b, field);
      if (x === null || y === null) {
        return (x === null) - (y === null) || collator.compare(a.schoolName, b.schoolName);
      }
      const order = typeof x === "string" ? collator.compare(x, y) : x - y;
      return (ascending ? order : -order) || collator.compare(a.schoolName, b.schoolName);
    });
  for (const th of $("schools").tHead.rows[0].cells) {
    th.setAttribute("aria-sort", th.dataset.field === field ? (ascending ? "ascending" : "descending") : "none");
  }
  $("schools").tBodies[0].replaceChildren(...rows.map((s) => schoolRow(s, true)));
  $("schools").tFoot.replaceChildren(schoolRow(schoolsTotal, false));
  $("school-count").textContent = `Showing ${rows.length} of ${schools.length} schools`;
}

// schoolRow is a row of the schools table: a school's, its name opening
// its view, or the district's total.
function schoolRow(s, isSchool) {
  const tr = document.createElement("tr");
  if (isSchool) {
    tr.dataset.id = s.schoolId;
  }
  for (const column of schoolColumns) {
    const td = document.createElement("td");
    td.dataset.field = column.field;
    const v = s[column.field];
    if (column.field === "schoolName" && isSchool) {
      const open = Object.assign(document.createElement("button"), { type: "button", className: "school", textContent: v });
      open.addEventListener("click", () => openSchool({ id: s.schoolId, name: s.schoolName }));
      td.append(open);
    } else if (column.field === "change") {
      const [text, trend] = s.usedBefore === undefined ? ["not compared", ""] : change(s.usedEither, s.usedBefore);
      Object.assign(td, { textContent: text, className: `change ${trend}` });
      td.title = s.usedBefore === undefined ? "" : `Students who used either: ${showCount(s.usedBefore)} in the days before`;
    } else if (v === null && (column.field === "seats" || (column.share && s.usedEither !== null))) {
      // Not said: the plan covers no number of students, or nobody is enrolled.
      td.textContent = "—";
      td.title = column.field === "shareUsed" ? "No student enrolled" : "The plan does not say how many students it covers";
    } else if (v === null) {
      Object.assign(td, { textContent: "hidden", className: "hidden-figure", title: hiddenNote() });
    } else {
      td.textContent = column.share ? `${(v * 100).toFixed(1)}%` : typeof v === "number" ? v.toLocaleString("en-US") : v;
    }
    if (column.field === "seatsUsedShare" && s.overSeats) {
      td.append(Object.assign(document.createElement("span"), { className: "badge over", textContent: "over seats" }));
    }
    tr.append(td);
  }
  return tr;
}

// openSchool shows a school of the district as its own key would see it,
// or with null the district again, its school's name in focus.
async function openSchool(school) {
  const from = districtSchool;
  districtSchool = school;
  forgetSchool();
  $("search").value = "";
  $("inactive-only").checked = false;
  $("stopped-only").checked = false;
  window.scrollTo(0, 0);
  await load();
  if (school) {
    $("place-name").focus();
  } else if (from) {
    $("schools").querySelector(`tr[data-id="${CSS.escape(from.id)}"] button`)?.focus();
  }
}
