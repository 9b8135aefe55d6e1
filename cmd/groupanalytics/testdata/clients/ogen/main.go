// Command ogen runs a session through the client that ogen generates from
// the service's /openapi.json (into ../ogenclient, at test time): a school
// and a district made through the admin API, events sent, both endpoints'
// reports, the list of who stopped and a refused key, each answer printed
// as session.go's summary has it.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/ogen-go/ogen/ogenerrors"

	"clients/ogenclient"
)

// credentials is the client's SecuritySource: a platform token for the
// admin API, a report key for the reports.
type credentials struct{ token, key string }

func (c *credentials) ApiKey(context.Context, ogenclient.OperationName) (ogenclient.ApiKey, error) {
	if c.key == "" {
		return ogenclient.ApiKey{}, ogenerrors.ErrSkipClientSecurity
	}
	return ogenclient.ApiKey{APIKey: c.key}, nil
}

func (c *credentials) PlatformToken(context.Context, ogenclient.OperationName) (ogenclient.PlatformToken, error) {
	return ogenclient.PlatformToken{Token: c.token}, nil
}

func (c *credentials) StaffSession(context.Context, ogenclient.OperationName) (ogenclient.StaffSession, error) {
	return ogenclient.StaffSession{}, ogenerrors.ErrSkipClientSecurity
}

func main() {
	base := flag.String("base", "", "the service's address")
	token := flag.String("token", "", "a platform token")
	monday := flag.String("monday", "", "the Monday the session's two weeks begin on")
	flag.Parse()
	first, err := time.Parse(time.DateOnly, *monday)
	if err != nil {
		log.Fatal(err)
	}
	creds := &credentials{token: *token}
	c, err := ogenclient.NewClient(*base, creds)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	must := func(res any, err error) any {
		if err != nil {
			log.Fatal(err)
		}
		return res
	}

	// The admin API: two schools with plans, a key, a student, a district.
	for _, g := range []struct{ id, name string }{{"north", "North"}, {"south", "South"}} {
		must(c.CreateGroup(ctx, &ogenclient.NewGroup{ID: g.id, Name: ogenclient.NewOptString(g.name), TimeZone: ogenclient.NewOptString("UTC")}))
		must(c.AddPlan(ctx, &ogenclient.NewPlan{Start: ogenclient.NewOptString("2025-01-01")}, ogenclient.AddPlanParams{GroupId: g.id}))
	}
	key := must(c.CreateKey(ctx, &ogenclient.NewKey{Label: ogenclient.NewOptString("generated")}, ogenclient.CreateKeyParams{GroupId: "north"})).(*ogenclient.CreatedKeyHeaders).Response.Key
	must(c.AddStudent(ctx, &ogenclient.Student{ID: "s3", Name: "Cy"}, ogenclient.AddStudentParams{GroupId: "north"}))
	must(c.CreateDistrict(ctx, &ogenclient.NewDistrict{ID: "lakeland", Name: ogenclient.NewOptString("Lakeland"), TimeZone: ogenclient.NewOptString("UTC")}))
	for _, g := range []string{"north", "south"} {
		must(c.AttachSchool(ctx, ogenclient.AttachSchoolParams{DistrictId: "lakeland", GroupId: g}))
	}
	districtKey := must(c.CreateDistrictKey(ctx, &ogenclient.NewDistrictKey{}, ogenclient.CreateDistrictKeyParams{DistrictId: "lakeland"})).(*ogenclient.CreatedDistrictKeyHeaders).Response.Key

	// Events, as the platform sends them.
	at := func(day int, hour int) time.Time {
		return first.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour)
	}
	events := ogenclient.IngestEventsReqApplicationJSON{
		{ID: "e1", GroupId: "north", StudentId: "s1", StudentName: ogenclient.NewOptString("Ada"), OccurredAt: at(1, 10), Kind: ogenclient.EventKindLiveLectureSessionCreated},
		{ID: "e2", GroupId: "north", StudentId: "s1", OccurredAt: at(1, 11), Kind: ogenclient.EventKindChatMessageSent, ChatType: ogenclient.NewOptEventChatType(ogenclient.EventChatTypeTutorMe)},
		{ID: "e3", GroupId: "north", StudentId: "s2", StudentName: ogenclient.NewOptString("Ben"), OccurredAt: at(8, 9), Kind: ogenclient.EventKindChatMessageSent, ChatType: ogenclient.NewOptEventChatType(ogenclient.EventChatTypeTest)},
		{ID: "e4", GroupId: "south", StudentId: "s9", OccurredAt: at(2, 12), Kind: ogenclient.EventKindLiveLectureSessionCreated},
	}
	sent := must(c.IngestEvents(ctx, &events)).(*ogenclient.IngestResultHeaders).Response
	fmt.Printf("sent: %d accepted, %d duplicates\n", sent.Accepted, sent.Duplicates)

	dates := func() (ogenclient.OptString, ogenclient.OptString) {
		return ogenclient.NewOptString(*monday), ogenclient.NewOptString(first.AddDate(0, 0, 13).Format(time.DateOnly))
	}
	start, end := dates()
	creds.key = key
	lecture := must(c.LiveLectureReports(ctx, ogenclient.OptReportParams{}, ogenclient.LiveLectureReportsParams{StartDate: start, EndDate: end,
		Interval: ogenclient.NewOptInterval(ogenclient.IntervalWeek)})).(*ogenclient.LiveLectureAnswerHeaders).Response
	for _, r := range lecture.Reports {
		g, ok := r.GetLiveLectureGroupReport()
		if !ok {
			log.Fatalf("a group report read as %s", r.Type)
		}
		fmt.Printf("live-lecture group %s used %s:%s\n", stamp(g.StartDate), nilInt(g.NumStudentsUsed), metrics(g.Data))
	}
	chat := must(c.ChatReports(ctx, ogenclient.OptReportParams{}, ogenclient.ChatReportsParams{StartDate: start, EndDate: end,
		Students: ogenclient.NewOptStudents(ogenclient.StudentsTrue), Interval: ogenclient.NewOptInterval(ogenclient.IntervalWeek)})).(*ogenclient.ChatAnswerHeaders).Response
	for _, r := range chat.Reports {
		s, ok := r.GetChatStudentReport()
		if !ok {
			log.Fatalf("a student report read as %s", r.Type)
		}
		fmt.Printf("chat student %s (%s) %s:%s\n", s.StudentId, s.StudentName, stamp(s.StartDate), metrics(s.Data))
	}
	creds.key = districtKey
	schools := must(c.ChatReports(ctx, ogenclient.OptReportParams{}, ogenclient.ChatReportsParams{StartDate: start, EndDate: end,
		Schools: ogenclient.NewOptSchools(ogenclient.SchoolsTrue)})).(*ogenclient.ChatAnswerHeaders).Response
	for _, r := range schools.Reports {
		s, ok := r.GetChatSchoolReport()
		if !ok {
			log.Fatalf("a school report read as %s", r.Type)
		}
		fmt.Printf("chat school %s (%s) used %s:%s\n", s.SchoolId, s.SchoolName, nilInt(s.NumStudentsUsed), metrics(s.Data))
	}
	creds.key = key
	uses := must(c.LastUse(ctx, ogenclient.LastUseParams{})).(*ogenclient.UseListHeaders).Response
	for _, s := range uses.Students {
		fmt.Printf("last use %s (%s): %s\n", s.StudentId, s.StudentName, s.Status)
	}

	// A key that is none: the typed 403.
	creds.key = "gak_NOTAKEYATALL"
	res, err := c.ChatReports(ctx, ogenclient.OptReportParams{}, ogenclient.ChatReportsParams{})
	refused, ok := res.(*ogenclient.UnauthorizedHeaders)
	if err != nil || !ok {
		log.Fatalf("a key that is none: %T %v", res, err)
	}
	fmt.Printf("refused: 403 %s\n", refused.Response.Error)
}

func metrics(data []ogenclient.Metric) string {
	s := ""
	for _, m := range data {
		s += fmt.Sprintf(" %s %s", m.Title, nilInt(m.Value))
	}
	return s
}

func nilInt(v ogenclient.NilInt) string {
	if v.Null {
		return "null"
	}
	return fmt.Sprint(v.Value)
}

// stamp writes a timestamp as the API does.
func stamp(t ogenclient.Timestamp) string {
	return time.Time(t).UTC().Format("2006-01-02T15:04:05.000Z")
}
