// Command oapi runs a session through the client that oapi-codegen
// generates from the service's /openapi.json (into ../oapiclient, at test
// time): a school and a district made through the admin API, events sent,
// both endpoints' reports, the list of who stopped and a refused key, each
// answer printed as the ogen session prints it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"clients/oapiclient"
)

func main() {
	base := flag.String("base", "", "the service's address")
	token := flag.String("token", "", "a platform token")
	monday := flag.String("monday", "", "the Monday the session's two weeks begin on")
	flag.Parse()
	first, err := time.Parse(time.DateOnly, *monday)
	if err != nil {
		log.Fatal(err)
	}
	c, err := oapiclient.NewClientWithResponses(*base)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	admin := header("Authorization", "Bearer "+*token)
	// ok fails the session on a transport error or a status other than want.
	ok := func(res interface{ StatusCode() int }, err error, want int) {
		if err != nil {
			log.Fatal(err)
		}
		if res.StatusCode() != want {
			log.Fatalf("%T: status %d, want %d", res, res.StatusCode(), want)
		}
	}

	// The admin API: two schools with plans, a key, a student, a district.
	for _, g := range []struct{ id, name string }{{"north", "North"}, {"south", "South"}} {
		res, err := c.CreateGroupWithResponse(ctx, oapiclient.NewGroup{Id: g.id, Name: ptr(g.name), TimeZone: ptr("UTC")}, admin)
		ok(res, err, http.StatusCreated)
		plan, err := c.AddPlanWithResponse(ctx, g.id, oapiclient.NewPlan{Start: ptr("2025-01-01")}, admin)
		ok(plan, err, http.StatusCreated)
	}
	created, err := c.CreateKeyWithResponse(ctx, "north", oapiclient.NewKey{Label: ptr("generated")}, admin)
	ok(created, err, http.StatusCreated)
	student, err := c.AddStudentWithResponse(ctx, "north", oapiclient.Student{Id: "s3", Name: "Cy"}, admin)
	ok(student, err, http.StatusCreated)
	district, err := c.CreateDistrictWithResponse(ctx, oapiclient.NewDistrict{Id: "lakeland", Name: ptr("Lakeland"), TimeZone: ptr("UTC")}, admin)
	ok(district, err, http.StatusCreated)
	for _, g := range []string{"north", "south"} {
		res, err := c.AttachSchoolWithResponse(ctx, "lakeland", g, admin)
		ok(res, err, http.StatusOK)
	}
	districtKey, err := c.CreateDistrictKeyWithResponse(ctx, "lakeland", oapiclient.NewDistrictKey{}, admin)
	ok(districtKey, err, http.StatusCreated)

	// Events, as the platform sends them.
	at := func(day int, hour int) time.Time {
		return first.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour)
	}
	tutorMe, test := oapiclient.EventChatType("tutor_me"), oapiclient.EventChatType("test")
	session, message := oapiclient.EventKind("live_lecture.session_created"), oapiclient.EventKind("chat.message_sent")
	events := oapiclient.IngestEventsJSONRequestBody{
		{Id: "e1", GroupId: "north", StudentId: "s1", StudentName: ptr("Ada"), OccurredAt: at(1, 10), Kind: session},
		{Id: "e2", GroupId: "north", StudentId: "s1", OccurredAt: at(1, 11), Kind: message, ChatType: &tutorMe},
		{Id: "e3", GroupId: "north", StudentId: "s2", StudentName: ptr("Ben"), OccurredAt: at(8, 9), Kind: message, ChatType: &test},
		{Id: "e4", GroupId: "south", StudentId: "s9", OccurredAt: at(2, 12), Kind: session},
	}
	sent, err := c.IngestEventsWithResponse(ctx, events, admin)
	ok(sent, err, http.StatusOK)
	fmt.Printf("sent: %d accepted, %d duplicates\n", sent.JSON200.Accepted, sent.JSON200.Duplicates)

	start, end := *monday, first.AddDate(0, 0, 13).Format(time.DateOnly)
	key := header("x-api-key", created.JSON201.Key)
	lectureWeek := oapiclient.LiveLectureReportsParamsInterval("week")
	lecture, err := c.LiveLectureReportsWithResponse(ctx, &oapiclient.LiveLectureReportsParams{StartDate: &start, EndDate: &end, Interval: &lectureWeek},
		oapiclient.ReportParams{}, key)
	ok(lecture, err, http.StatusOK)
	for _, r := range lecture.JSON200.Reports {
		g, err := r.AsLiveLectureGroupReport()
		if err != nil || g.NumStudentsUsed == nil {
			log.Fatalf("a group report: %v", err)
		}
		fmt.Printf("live-lecture group %s used %s:%s\n", stamp(g.StartDate), nilInt(g.NumStudentsUsed), metrics(g.Data))
	}
	students, week := oapiclient.ChatReportsParamsStudents("true"), oapiclient.ChatReportsParamsInterval("week")
	chat, err := c.ChatReportsWithResponse(ctx, &oapiclient.ChatReportsParams{StartDate: &start, EndDate: &end, Students: &students, Interval: &week},
		oapiclient.ReportParams{}, key)
	ok(chat, err, http.StatusOK)
	for _, r := range chat.JSON200.Reports {
		s, err := r.AsChatStudentReport()
		if err != nil || s.StudentId == "" {
			log.Fatalf("a student report: %v", err)
		}
		fmt.Printf("chat student %s (%s) %s:%s\n", s.StudentId, s.StudentName, stamp(s.StartDate), metrics(s.Data))
	}
	schoolsTrue := oapiclient.ChatReportsParamsSchools("true")
	schools, err := c.ChatReportsWithResponse(ctx, &oapiclient.ChatReportsParams{StartDate: &start, EndDate: &end, Schools: &schoolsTrue},
		oapiclient.ReportParams{}, header("x-api-key", districtKey.JSON201.Key))
	ok(schools, err, http.StatusOK)
	for _, r := range schools.JSON200.Reports {
		s, err := r.AsChatSchoolReport()
		if err != nil || s.SchoolId == "" {
			log.Fatalf("a school report: %v", err)
		}
		fmt.Printf("chat school %s (%s) used %s:%s\n", s.SchoolId, s.SchoolName, nilInt(s.NumStudentsUsed), metrics(s.Data))
	}
	uses, err := c.LastUseWithResponse(ctx, &oapiclient.LastUseParams{}, key)
	ok(uses, err, http.StatusOK)
	for _, s := range uses.JSON200.Students {
		fmt.Printf("last use %s (%s): %s\n", s.StudentId, s.StudentName, s.Status)
	}

	// A key that is none: the typed 403.
	refused, err := c.ChatReportsWithResponse(ctx, &oapiclient.ChatReportsParams{}, oapiclient.ReportParams{}, header("x-api-key", "gak_NOTAKEYATALL"))
	ok(refused, err, http.StatusForbidden)
	fmt.Printf("refused: 403 %s\n", refused.JSON403.Error)
}

// header sets a header of one request.
func header(name, value string) oapiclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set(name, value)
		return nil
	}
}

func ptr[T any](v T) *T { return &v }

func metrics(data []oapiclient.Metric) string {
	s := ""
	for _, m := range data {
		s += fmt.Sprintf(" %s %s", m.Title, nilInt(m.Value))
	}
	return s
}

func nilInt(v *int) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

// stamp writes a timestamp as the API does.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
