package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/roster"
)

// maxMembersBody caps a request naming a class's members: MaxClassMembers
// ids of up to 128 characters.
const maxMembersBody = 2 << 20

// classJSON is a class as the admin API shows it.
type classJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	StartDate  string   `json:"startDate,omitempty"`
	EndDate    string   `json:"endDate,omitempty"`
	StudentIDs []string `json:"studentIds"`
}

func toClassJSON(c analytics.Class) classJSON {
	return classJSON{ID: c.ID, Name: c.Name, StartDate: c.Start, EndDate: c.End, StudentIDs: c.Members}
}

func (s *Server) listClasses(r *http.Request) (int, any, error) {
	classes, err := s.platform.Classes(r.Context(), r.PathValue("groupId"))
	return http.StatusOK, map[string]any{"classes": listOf(classes, toClassJSON)}, err
}

func (s *Server) createClass(r *http.Request) (int, any, error) {
	var in classJSON
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	c, err := s.platform.CreateClass(r.Context(), analytics.Class{GroupID: r.PathValue("groupId"), ID: in.ID, Name: in.Name,
		Start: in.StartDate, End: in.EndDate, Members: in.StudentIDs})
	return http.StatusCreated, toClassJSON(c), err
}

func (s *Server) getClass(r *http.Request) (int, any, error) {
	c, err := s.platform.Class(r.Context(), r.PathValue("groupId"), r.PathValue("classId"))
	return http.StatusOK, toClassJSON(c), err
}

// updateClass changes the fields given: the name, and the term's dates
// ("" takes a date away).
func (s *Server) updateClass(r *http.Request) (int, any, error) {
	var in struct {
		Name      *string `json:"name"`
		StartDate *string `json:"startDate"`
		EndDate   *string `json:"endDate"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	c, err := s.platform.Class(r.Context(), r.PathValue("groupId"), r.PathValue("classId"))
	if err != nil {
		return 0, nil, err
	}
	for _, field := range []struct{ in, to *string }{{in.Name, &c.Name}, {in.StartDate, &c.Start}, {in.EndDate, &c.End}} {
		if field.in != nil {
			*field.to = *field.in
		}
	}
	c, err = s.platform.UpdateClass(r.Context(), c)
	return http.StatusOK, toClassJSON(c), err
}

func (s *Server) deleteClass(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.DeleteClass(r.Context(), r.PathValue("groupId"), r.PathValue("classId"))
}

func (s *Server) setClassMembers(r *http.Request) (int, any, error) {
	var in struct {
		StudentIDs []string `json:"studentIds"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.StudentIDs == nil {
		return 0, nil, analytics.Errorf(analytics.Invalid, "Missing studentIds: the class's members, [] for none")
	}
	c, err := s.platform.SetClassMembers(r.Context(), r.PathValue("groupId"), r.PathValue("classId"), in.StudentIDs)
	return http.StatusOK, toClassJSON(c), err
}

// maxRosterBody caps a roster bundle (a zip).
const maxRosterBody = 100 << 20

// importRoster takes a OneRoster CSV bundle (a zip) as the body;
// ?dryRun=true says what it would change, ?org=ID picks the school of a
// bundle of several.
func (s *Server) importRoster(r *http.Request) (int, any, error) {
	b, dryRun, err := readRoster(r)
	if err != nil {
		return 0, nil, err
	}
	res, err := s.platform.ImportRoster(r.Context(), r.PathValue("groupId"), r.URL.Query().Get("org"), b, dryRun)
	return http.StatusOK, res, err
}

// importDistrictRoster serves POST /v1/admin/districts/{districtId}/roster.
func (s *Server) importDistrictRoster(r *http.Request) (int, any, error) {
	b, dryRun, err := readRoster(r)
	if err != nil {
		return 0, nil, err
	}
	res, err := s.platform.ImportDistrictRoster(r.Context(), r.PathValue("districtId"), b, dryRun)
	return http.StatusOK, res, err
}

// readRoster reads a roster import's bundle and its dryRun parameter.
func readRoster(r *http.Request) (*roster.Bundle, bool, error) {
	dryRun := false
	if v := r.URL.Query().Get("dryRun"); v != "" {
		var err error
		if dryRun, err = strconv.ParseBool(v); err != nil {
			return nil, false, analytics.Errorf(analytics.Invalid, "Invalid dryRun: expected true or false, got %q", v)
		}
	}
	body, err := readBody(r)
	if err != nil {
		return nil, false, err
	}
	b, err := roster.Read(body)
	if err != nil {
		return nil, false, analytics.Errorf(analytics.Invalid, "Invalid roster: %s", err)
	}
	return b, dryRun, nil
}

// keyClasses serves GET /api/classes: the classes a school's key may ask
// reports of (a teacher's key, its own), for the dashboard's picker.
func (s *Server) keyClasses(w http.ResponseWriter, r *http.Request, access analytics.Access, now time.Time) {
	access, err := schoolOfKey(r, access)
	var classes []analytics.Class
	if err == nil {
		classes, err = s.platform.Classes(r.Context(), access.Group.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	type class struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Students int    `json:"students"`
	}
	out := []class{}
	for _, c := range classes {
		if !access.ForClasses || slices.Contains(access.Classes, c.ID) {
			out = append(out, class{c.ID, c.Name, len(c.Members)})
		}
	}
	// The first day kept, so that the dashboard asks for none before it.
	var firstKept *string
	if access.Group.Retention != 0 {
		loc, err := access.Group.Location()
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		day := access.Group.FirstKeptDay(now, loc).String()
		firstKept = &day
	}
	writeJSON(w, http.StatusOK, struct {
		ForClasses   bool    `json:"forClasses"`
		MinCellSize  int     `json:"minCellSize"`
		FirstKeptDay *string `json:"firstKeptDay"`
		Classes      []class `json:"classes"`
	}{access.ForClasses, access.Group.MinCellSize, firstKept, out})
}

// placeJSON is a school or a district as a key's reads name it.
type placeJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	TimeZone string `json:"timeZone"`
}

// keyMe serves GET /api/me: what the key, or the signed-in person's
// session, opens, so that the dashboard knows which view to show. A
// school's key its school (a teacher's, its classes too); a district's
// key its district, its schools with a valid plan, and those left out. A
// session also names its person, and gives the CSRF token its requests
// other than GET carry.
func (s *Server) keyMe(w http.ResponseWriter, r *http.Request, access analytics.Access, _ time.Time) {
	place := func(g analytics.Group) placeJSON { return placeJSON{g.ID, g.Name, g.TimeZone} }
	var signedIn signedInJSON
	if p := access.Person; p != nil {
		signedIn.Person = &mePersonJSON{p.Email, p.Name, string(p.Role), p.ProviderID}
		// A cookie's session needs its CSRF token; an LTI launch's, sent
		// as a key, none.
		if c, err := r.Cookie(sessionCookie); err == nil && r.Header.Get("x-api-key") == "" {
			signedIn.CSRFToken = csrfToken(c.Value)
		}
	}
	if access.District != nil && access.Group.ID == "" {
		d := access.District.District
		writeJSON(w, http.StatusOK, struct {
			Kind           string        `json:"kind"`
			District       placeJSON     `json:"district"`
			Schools        []placeJSON   `json:"schools"`
			SchoolsLeftOut []leftOutJSON `json:"schoolsLeftOut"`
			signedInJSON
		}{"district", placeJSON{d.ID, d.Name, d.TimeZone}, listOf(access.District.Schools, place), listOf(access.District.Unplanned, toLeftOut), signedIn})
		return
	}
	kind, classes := "school", []string(nil)
	if access.ForClasses {
		kind, classes = "teacher", slices.Clone(access.Classes)
	}
	writeJSON(w, http.StatusOK, struct {
		Kind     string    `json:"kind"`
		School   placeJSON `json:"school"`
		ClassIDs []string  `json:"classIds,omitempty"`
		signedInJSON
	}{kind, place(access.Group), classes, signedIn})
}

// signedInJSON is what /api/me adds for a signed-in session.
type signedInJSON struct {
	Person    *mePersonJSON `json:"person,omitempty"`
	CSRFToken string        `json:"csrfToken,omitempty"`
}

type mePersonJSON struct {
	Email    string `json:"email"`
	Name     string `json:"name"`
	Role     string `json:"role"`
	Provider string `json:"provider"`
}
