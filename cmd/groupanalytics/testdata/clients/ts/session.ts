// A session through the client that openapi-typescript and openapi-fetch
// make of the service's /openapi.json (schema.d.ts, generated at test
// time): a school and a district made through the admin API, events sent,
// both endpoints' reports, the list of who stopped and a refused key, each
// answer printed as the Go sessions print it.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.js";

type Metric = components["schemas"]["Metric"];

const [base, token, monday] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl: base });
const admin = { Authorization: `Bearer ${token}` };

// ok returns an answer's data, or ends the session with its status.
function ok<T>(res: { data?: T; error?: unknown; response: Response }, want: number): T {
  if (res.response.status !== want || res.data === undefined) {
    throw new Error(`${res.response.url}: status ${res.response.status}, want ${want}: ${JSON.stringify(res.error)}`);
  }
  return res.data;
}

// json narrows an answer that could be CSV (format=csv) to its JSON.
function json<T>(data: T | string): T {
  if (typeof data === "string") throw new Error("a CSV answer where JSON was asked");
  return data;
}

const day = (n: number, hour: number) => {
  const d = new Date(`${monday}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  d.setUTCHours(hour);
  return d.toISOString();
};
const metrics = (data: Metric[]) => data.map((m) => ` ${m.title} ${m.value ?? "null"}`).join("");

// The admin API: two schools with plans, a key, a student, a district.
for (const [id, name] of [["north", "North"], ["south", "South"]]) {
  ok(await client.POST("/v1/admin/groups", { headers: admin, body: { id, name, timeZone: "UTC" } }), 201);
  ok(await client.POST("/v1/admin/groups/{groupId}/plans", { headers: admin, params: { path: { groupId: id } }, body: { start: "2025-01-01" } }), 201);
}
const key = ok(await client.POST("/v1/admin/groups/{groupId}/keys", { headers: admin, params: { path: { groupId: "north" } }, body: { label: "generated" } }), 201).key;
ok(await client.POST("/v1/admin/groups/{groupId}/students", { headers: admin, params: { path: { groupId: "north" } }, body: { id: "s3", name: "Cy" } }), 201);
ok(await client.POST("/v1/admin/districts", { headers: admin, body: { id: "lakeland", name: "Lakeland", timeZone: "UTC" } }), 201);
for (const groupId of ["north", "south"]) {
  ok(await client.PUT("/v1/admin/districts/{districtId}/schools/{groupId}", { headers: admin, params: { path: { districtId: "lakeland", groupId } } }), 200);
}
const districtKey = ok(await client.POST("/v1/admin/districts/{districtId}/keys", { headers: admin, params: { path: { districtId: "lakeland" } }, body: {} }), 201).key;

// Events, as the platform sends them.
const sent = ok(await client.POST("/v1/events", {
  headers: admin,
  body: [
    { id: "e1", groupId: "north", studentId: "s1", studentName: "Ada", occurredAt: day(1, 10), kind: "live_lecture.session_created" },
    { id: "e2", groupId: "north", studentId: "s1", occurredAt: day(1, 11), kind: "chat.message_sent", chatType: "tutor_me" },
    { id: "e3", groupId: "north", studentId: "s2", studentName: "Ben", occurredAt: day(8, 9), kind: "chat.message_sent", chatType: "test" },
    { id: "e4", groupId: "south", studentId: "s9", occurredAt: day(2, 12), kind: "live_lecture.session_created" },
  ],
}), 200);
console.log(`sent: ${sent.accepted} accepted, ${sent.duplicates} duplicates`);

const startDate = monday, endDate = day(13, 0).slice(0, 10);
const lecture = json(ok(await client.POST("/api/groups/live-lecture", {
  headers: { "x-api-key": key }, params: { query: { startDate, endDate, interval: "week" } },
}), 200));
for (const r of lecture.reports) {
  if (!("numStudentsUsed" in r) || "schoolId" in r) throw new Error("not a group report");
  console.log(`live-lecture group ${r.startDate} used ${r.numStudentsUsed ?? "null"}:${metrics(r.data)}`);
}
const chat = json(ok(await client.POST("/api/groups/chat", {
  headers: { "x-api-key": key }, params: { query: { startDate, endDate, students: "true", interval: "week" } },
}), 200));
for (const r of chat.reports) {
  if (!("studentId" in r)) throw new Error("not a student report");
  console.log(`chat student ${r.studentId} (${r.studentName}) ${r.startDate}:${metrics(r.data)}`);
}
const schools = json(ok(await client.POST("/api/groups/chat", {
  headers: { "x-api-key": districtKey }, params: { query: { startDate, endDate, schools: "true" } },
}), 200));
for (const r of schools.reports) {
  if (!("schoolId" in r)) throw new Error("not a school report");
  console.log(`chat school ${r.schoolId} (${r.schoolName}) used ${r.numStudentsUsed ?? "null"}:${metrics(r.data)}`);
}
const uses = json(ok(await client.GET("/api/last-use", { headers: { "x-api-key": key } }), 200));
for (const s of uses.students) {
  console.log(`last use ${s.studentId} (${s.studentName}): ${s.status}`);
}

// A key that is none: the typed 403.
const refused = await client.POST("/api/groups/chat", { headers: { "x-api-key": "gak_NOTAKEYATALL" } });
if (refused.response.status !== 403 || refused.error === undefined) throw new Error(`a key that is none: ${refused.response.status}`);
console.log(`refused: 403 ${refused.error.error}`);
