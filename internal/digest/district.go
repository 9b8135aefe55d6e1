package digest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"html/template"
	"math/big"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/report"
)

// DistrictDigest is a district's week: its totals beside the week
// before's (its schools' added up, as its key's reports give them), and
// its schools compared by their adoption of the week, the lowest share of
// students who used the service first.
type DistrictDigest struct {
	District analytics.District
	Week     analytics.Week
	Days     analytics.DayRange
	Sections []Section
	// Schools are the schools with a valid plan, the lowest share used
	// first (hidden ones last); Total is the district's row.
	Schools []SchoolWeek
	Total   SchoolWeek
	// LeftOut are the district's schools without a valid plan: in no
	// figure, and named.
	LeftOut []analytics.Group
}

// SchoolWeek is a school's adoption of the week (the district's, for the
// total) beside the week before's students who used either endpoint.
type SchoolWeek struct {
	report.Adoption
	PreviousUsed int
}

// MaxSchoolRows is how many schools a district's digest lists, the lowest
// shares first; it counts the rest, which the dashboard shows.
const MaxSchoolRows = 20

// ComposeDistrict makes the district's digest of week from the report
// engine: the same numbers as its key's report and adoption answers for
// the week's seven days.
func ComposeDistrict(ctx context.Context, engine *report.Engine, da *analytics.DistrictAccess, week analytics.Week, now time.Time) (DistrictDigest, error) {
	d := DistrictDigest{District: da.District, Week: week, Days: week.Days(), LeftOut: da.Unplanned}
	for _, sec := range sections {
		section := newSection(sec.title, sec.endpoint)
		for _, w := range []analytics.Week{week, week.Previous()} {
			q, err := weekQuery(w)
			if err != nil {
				return d, err
			}
			err = engine.RunDistrict(ctx, da, sec.endpoint, report.DistrictQuery{Query: q}, now, func(r *report.Report) error {
				section.fill(r, w == week)
				return nil
			})
			if err != nil {
				return d, fmt.Errorf("digest of district %s %s: %w", da.District.ID, w, err)
			}
		}
		d.Sections = append(d.Sections, section)
	}
	loc, err := da.District.Location()
	if err != nil {
		return d, err
	}
	var adoption [2]report.AdoptionReport
	for i, w := range []analytics.Week{week, week.Previous()} {
		q, err := weekQuery(w)
		if err == nil {
			adoption[i], err = engine.Adoption(ctx, da.Schools, da.Schools, q, now, loc)
		}
		if err != nil {
			return d, fmt.Errorf("digest of district %s %s: %w", da.District.ID, w, err)
		}
	}
	for i, a := range adoption[0].Schools {
		d.Schools = append(d.Schools, SchoolWeek{a, adoption[1].Schools[i].UsedEither})
	}
	d.Total = SchoolWeek{adoption[0].Total, adoption[1].Total.UsedEither}
	lowestShareFirst(d.Schools)
	return d, nil
}

// lowestShareFirst sorts schools by their share of students who used the
// service, the lowest first, then by name; a share hidden, or of nobody
// enrolled, last.
func lowestShareFirst(schools []SchoolWeek) {
	slices.SortStableFunc(schools, func(a, b SchoolWeek) int {
		x, xok := report.Share(a.UsedEither, a.Enrolled)
		y, yok := report.Share(b.UsedEither, b.Enrolled)
		switch {
		case xok != yok && xok:
			return -1
		case xok != yok:
			return 1
		}
		return cmp.Or(cmp.Compare(x, y), cmp.Compare(a.Name(), b.Name()))
	})
}

// weekQuery asks the week's seven days, whole.
func weekQuery(w analytics.Week) (report.Query, error) {
	days := w.Days()
	start, err := analytics.ParseDate("startDate", days.First.String())
	if err != nil {
		return report.Query{}, err
	}
	end, err := analytics.ParseDate("endDate", days.Last.String())
	return report.Query{Start: &start, End: &end, Interval: analytics.Whole}, err
}

// Subject is the digest's subject line.
func (d DistrictDigest) Subject() string {
	return fmt.Sprintf("%s: the week of %s", d.District.Name, span(d.Days))
}

func (d DistrictDigest) messageKey() string {
	return "district-" + d.District.ID + "." + d.Week.String()
}

// Listed are the schools the digest names, the lowest shares first.
func (d DistrictDigest) Listed() []SchoolWeek {
	return d.Schools[:min(len(d.Schools), MaxSchoolRows)]
}

// Share writes a's share of students who used the service: "88.8%", or
// "hidden", or "-" when nobody is enrolled.
func (a SchoolWeek) Share() string {
	if a.UsedEither == report.Suppressed {
		return "hidden"
	}
	v, ok := report.Share(a.UsedEither, a.Enrolled)
	if !ok {
		return "-"
	}
	return tenths(v*100) + "%"
}

// tenths writes x (not negative) to one decimal as the dashboard's
// toFixed(1) does: the tenth nearest x's exact value, a half up, so that
// the email and the page say the same of 357 of 400 (89.3%).
func tenths(x float64) string {
	f := new(big.Float).SetPrec(256).SetFloat64(x) // exact
	f.Mul(f, big.NewFloat(10)).Add(f, big.NewFloat(0.5))
	n, _ := f.Int(nil) // toward zero: the floor, as x is not negative
	return fmt.Sprintf("%d.%d", new(big.Int).Quo(n, big.NewInt(10)), new(big.Int).Rem(n, big.NewInt(10)))
}

// SeatsText writes the seats a's plans cover, "over" when more students
// used it, or "-" when they do not say.
func (a SchoolWeek) SeatsText() string {
	switch {
	case a.Seats == 0:
		return "-"
	case a.UsedEither != report.Suppressed && a.UsedEither > a.Seats:
		return thousands(int64(a.Seats)) + " (over)"
	}
	return thousands(int64(a.Seats))
}

// Name is the school's name, or the total's.
func (a SchoolWeek) Name() string {
	if a.School == nil {
		return "All schools"
	}
	return a.School.Name
}

// LeftOutLine names the schools left out, or says nothing.
func (d DistrictDigest) LeftOutLine() string {
	if len(d.LeftOut) == 0 {
		return ""
	}
	names := make([]string, len(d.LeftOut))
	for i, g := range d.LeftOut {
		names[i] = g.Name
	}
	return "Left out, without a valid plan: " + strings.Join(names, ", ") + "."
}

// MoreLine counts the schools not listed.
func (d DistrictDigest) MoreLine() string {
	if more := len(d.Schools) - len(d.Listed()); more > 0 {
		return fmt.Sprintf("And %s: the dashboard lists them all.", analytics.Plural(more, "more school"))
	}
	return ""
}

func (d DistrictDigest) writeText(w *bytes.Buffer, links Links) {
	fmt.Fprintf(w, "Weekly digest of %s, %s (%s)\n", d.District.Name, span(d.Days), d.District.TimeZone)
	for _, s := range d.Sections {
		fmt.Fprintf(w, "\n%s\n", s.Title)
		for _, r := range s.Rows {
			change, _ := Change(r.Value, r.Previous)
			fmt.Fprintf(w, "  %-24s %9s  %s (%s the week before)\n", r.Title, thousands(r.Value), change, thousands(r.Previous))
		}
	}
	fmt.Fprintf(w, "\nSchools, the lowest share of students who used it first\n")
	fmt.Fprintf(w, "  %-28s %7s %9s %7s %13s  %s\n", "School", "Used", "Enrolled", "Share", "Seats", "Used, vs the week before")
	for _, a := range append(slices.Clone(d.Listed()), d.Total) {
		change, _ := Change(int64(a.UsedEither), int64(a.PreviousUsed))
		fmt.Fprintf(w, "  %-28s %7s %9s %7s %13s  %s\n", a.Name(), thousands(int64(a.UsedEither)), thousands(int64(a.Enrolled)),
			a.Share(), a.SeatsText(), change)
	}
	for _, line := range []string{d.MoreLine(), d.LeftOutLine()} {
		if line != "" {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "\nThe dashboard on this week: %s\n", links.Dashboard)
	if links.Unsubscribe != "" {
		fmt.Fprintf(w, "\nYou receive this digest as a recipient of %s's. To stop it: %s\n", d.District.Name, links.Unsubscribe)
	}
}

func (d DistrictDigest) writeHTML(w *bytes.Buffer, links Links) error {
	return districtTemplate.Execute(w, struct {
		DistrictDigest
		Links Links
	}{d, links})
}

var districtTemplate = template.Must(template.Must(htmlTemplate.Clone()).New("district").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Subject}}</title></head>
<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1f2328;max-width:40em;margin:0 auto;padding:1em">
<h1 style="font-size:1.3em">Weekly digest of {{.District.Name}}</h1>
<p style="color:#57606a">{{span .Days}} ({{.District.TimeZone}})</p>
{{template "sections" .Sections}}
<h2 style="font-size:1.1em;margin-top:1.5em">Schools, the lowest share of students who used it first</h2>
<table style="border-collapse:collapse;width:100%">
<tr style="color:#57606a;text-align:right"><th scope="col" style="padding:4px 8px 4px 0;text-align:left">School</th><th scope="col" style="padding:4px">Used</th><th scope="col" style="padding:4px">Enrolled</th><th scope="col" style="padding:4px">Share</th><th scope="col" style="padding:4px">Seats</th><th scope="col" style="padding:4px 0 4px 4px">vs the week before</th></tr>
{{range .Listed}}{{template "school" .}}{{end}}{{template "school" .Total}}</table>
{{with .MoreLine}}<p>{{.}}</p>{{end}}{{with .LeftOutLine}}<p>{{.}}</p>{{end}}
<p style="margin-top:1.5em"><a href="{{.Links.Dashboard}}">Open the dashboard on this week</a></p>
{{with .Links.Unsubscribe}}<p style="color:#57606a;font-size:0.9em">You receive this digest as a recipient of {{$.District.Name}}'s. <a href="{{.}}">Unsubscribe</a></p>{{end}}
</body></html>
{{define "school"}}<tr style="border-top:1px solid #d0d7de;text-align:right"><td style="padding:4px 8px 4px 0;text-align:left">{{.Name}}</td><td style="padding:4px">{{count .UsedEither}}</td><td style="padding:4px">{{count .Enrolled}}</td><td style="padding:4px"><strong>{{.Share}}</strong></td><td style="padding:4px">{{.SeatsText}}</td><td style="padding:4px 0 4px 4px">{{changeOf .UsedEither .PreviousUsed}}</td></tr>
{{end}}`))
