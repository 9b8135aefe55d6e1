package platform

import (
	"cmp"
	"context"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/roster"
)

// CreateDistrict creates a district: an id as a group's, a name (the id
// when empty) and the time zone its reports' bounds are told in (UTC
// when empty).
func (p *Platform) CreateDistrict(ctx context.Context, id, name, timeZone string) (analytics.District, error) {
	if !groupIDPattern.MatchString(id) {
		return analytics.District{}, invalid("Invalid district id %q: expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	if name == "" {
		name = id
	}
	if err := checkText("name", name, 200); err != nil {
		return analytics.District{}, err
	}
	if timeZone == "" {
		timeZone = "UTC"
	}
	if _, err := analytics.LoadZone(timeZone); err != nil {
		return analytics.District{}, invalid("Invalid timeZone %q: expected an IANA time zone such as America/Chicago", timeZone)
	}
	d := analytics.District{ID: id, Name: name, TimeZone: timeZone, Created: p.Now().UTC().Truncate(time.Millisecond)}
	return d, p.Directory.CreateDistrict(ctx, d)
}

// District returns a district with its schools.
func (p *Platform) District(ctx context.Context, id string) (analytics.District, error) {
	if err := knownDistrict(id); err != nil {
		return analytics.District{}, err
	}
	return p.Directory.District(ctx, id)
}

// Districts lists the districts, by id.
func (p *Platform) Districts(ctx context.Context) ([]analytics.District, error) {
	return p.Directory.Districts(ctx)
}

// RenameDistrict changes a district's name.
func (p *Platform) RenameDistrict(ctx context.Context, id, name string) (analytics.District, error) {
	d, err := p.District(ctx, id)
	if err != nil {
		return d, err
	}
	if err := checkText("name", name, 200); err != nil {
		return d, err
	}
	d.Name = name
	return d, p.Directory.RenameDistrict(ctx, id, name)
}

// DeleteDistrict deletes a district and its keys; its schools stay, with
// everything of theirs.
func (p *Platform) DeleteDistrict(ctx context.Context, id string) error {
	if err := knownDistrict(id); err != nil {
		return err
	}
	return p.Directory.DeleteDistrict(ctx, id)
}

// AttachSchool puts a school (a group) in a district.
func (p *Platform) AttachSchool(ctx context.Context, districtID, groupID string) error {
	if err := knownDistrict(districtID); err != nil {
		return err
	}
	if err := knownGroup(groupID); err != nil {
		return err
	}
	return p.Directory.AttachSchool(ctx, districtID, groupID)
}

// DetachSchool takes a school out of its district; the school keeps
// everything of its own.
func (p *Platform) DetachSchool(ctx context.Context, districtID, groupID string) error {
	if err := knownDistrict(districtID); err != nil {
		return err
	}
	if err := knownGroup(groupID); err != nil {
		return analytics.Errorf(analytics.NotFound, "Group %q is not in district %q", groupID, districtID)
	}
	return p.Directory.DetachSchool(ctx, districtID, groupID)
}

// CreateDistrictKey creates a district's report key and returns it with
// its secret, which is not stored and cannot be shown again.
func (p *Platform) CreateDistrictKey(ctx context.Context, districtID, label string) (analytics.APIKey, string, error) {
	if label != "" {
		if err := checkText("label", label, 200); err != nil {
			return analytics.APIKey{}, "", err
		}
	}
	if err := knownDistrict(districtID); err != nil {
		return analytics.APIKey{}, "", err
	}
	secret, prefix, id := newSecret(strings.TrimSuffix(analytics.DistrictKeyPrefix, "_"))
	k := analytics.APIKey{DistrictID: districtID, ID: "dkey_" + id, Prefix: prefix, Label: label,
		Hash: analytics.HashSecret(secret), Created: p.Now().UTC().Truncate(time.Millisecond)}
	if err := p.Directory.AddDistrictKey(ctx, k); err != nil {
		return k, "", err
	}
	return k, secret, nil
}

// DistrictKeys lists a district's keys, without secrets.
func (p *Platform) DistrictKeys(ctx context.Context, districtID string) ([]analytics.APIKey, error) {
	if err := knownDistrict(districtID); err != nil {
		return nil, err
	}
	return p.Directory.DistrictKeys(ctx, districtID)
}

// RevokeDistrictKey stops a district's key from working, from now on.
func (p *Platform) RevokeDistrictKey(ctx context.Context, districtID, keyID string) error {
	if err := knownDistrict(districtID); err != nil || !storable(keyID) {
		return analytics.Errorf(analytics.NotFound, "Key %q of district %q not found", keyID, districtID)
	}
	return p.Directory.RevokeDistrictKey(ctx, districtID, keyID, p.Now().UTC())
}

// knownDistrict answers NotFound for an id that no district can have.
func knownDistrict(id string) error {
	if !groupIDPattern.MatchString(id) {
		return analytics.Errorf(analytics.NotFound, "District %q not found", id)
	}
	return nil
}

// SchoolRosterResult is what a district's roster import changed of one
// school, or would: the group, whether it was made, and its roster's
// change.
type SchoolRosterResult struct {
	GroupID string `json:"groupId"`
	Created bool   `json:"created"`
	RosterResult
}

// DistrictRosterResult says what a district's roster import changed, or
// would change, school by school in the bundle's order.
type DistrictRosterResult struct {
	DryRun  bool                 `json:"dryRun"`
	Schools []SchoolRosterResult `json:"schools"`
	// DistrictStaff is what it changed of the district's own staff: its
	// administrators.
	DistrictStaff StaffCounts `json:"districtStaff"`
	// Warnings are the bundle's cells not read, as RosterResult's.
	Warnings []roster.Warning `json:"warnings,omitempty"`
}

// ImportDistrictRoster takes a district's OneRoster bundle, all or nothing:
// every school of orgs.csv becomes a group of the district (its sourcedId
// the group's id; made, in the district's zone, when there is none, and
// put in the district when it is in none), and each school's students and
// classes are imported into it as ImportRoster imports them, and the
// district's administrators join its staff. A school in
// another district refuses the whole bundle. With dryRun, nothing changes.
func (p *Platform) ImportDistrictRoster(ctx context.Context, districtID string, b *roster.Bundle, dryRun bool) (DistrictRosterResult, error) {
	res := DistrictRosterResult{DryRun: dryRun, Schools: []SchoolRosterResult{}, Warnings: b.Warnings}
	d, err := p.District(ctx, districtID)
	if err != nil {
		return res, err
	}
	schools, err := p.bundleSchools(ctx, d, b)
	if err != nil {
		return res, err
	}
	var existing []string
	for _, sr := range schools {
		if !sr.New {
			existing = append(existing, sr.Group.ID)
		}
	}
	if _, err := p.Usage.SettleGroups(ctx, existing); err != nil {
		return res, err
	}
	for i := range schools {
		r, change, err := p.rosterChange(ctx, schools[i].Group.ID, schools[i].Group.ID, b)
		if err != nil {
			return res, err
		}
		r.DryRun = dryRun
		schools[i].Change = change
		res.Schools = append(res.Schools, SchoolRosterResult{GroupID: schools[i].Group.ID, Created: schools[i].New, RosterResult: r})
	}
	staff, err := p.Directory.StaffOf(ctx, "", districtID)
	if err != nil {
		return res, err
	}
	change := districtStaff(b)
	res.DistrictStaff = p.countStaff(change, staff)
	if dryRun {
		return res, nil
	}
	return res, p.Directory.ApplyDistrictRoster(ctx, districtID, schools, change)
}

// bundleSchools returns the groups of the bundle's schools: those there
// are, and those to make, in the bundle's order.
func (p *Platform) bundleSchools(ctx context.Context, d analytics.District, b *roster.Bundle) ([]analytics.SchoolRoster, error) {
	var schools []analytics.SchoolRoster
	for _, o := range b.Orgs {
		if o.Type != "school" || o.Deleted() {
			continue
		}
		if !groupIDPattern.MatchString(o.SourcedID) {
			return nil, invalid("Invalid roster: orgs.csv line %d: school %q cannot be a group's id: expected 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", o.Line, o.SourcedID)
		}
		g, err := p.Directory.Group(ctx, o.SourcedID)
		switch {
		case analytics.ErrorCode(err) == analytics.NotFound:
			name := cmp.Or(strings.TrimSpace(o.Name), o.SourcedID)
			if err := checkText("name", name, 200); err != nil {
				return nil, invalid("Invalid roster: orgs.csv line %d: school %q: %s", o.Line, o.SourcedID, analytics.ErrorMessage(err))
			}
			g = analytics.Group{ID: o.SourcedID, Name: name, TimeZone: d.TimeZone, Created: p.Now().UTC().Truncate(time.Millisecond),
				InactiveAfter: analytics.DefaultInactiveAfter}
			schools = append(schools, analytics.SchoolRoster{Group: g, New: true})
		case err != nil:
			return nil, err
		case g.DistrictID != "" && g.DistrictID != d.ID:
			return nil, analytics.Errorf(analytics.Conflict, "Invalid roster: school %q is group %q of district %q; detach it there first, nothing imported", o.SourcedID, g.ID, g.DistrictID)
		default:
			schools = append(schools, analytics.SchoolRoster{Group: g})
		}
	}
	if len(schools) == 0 {
		return nil, invalid("Invalid roster: orgs.csv names no school")
	}
	return schools, nil
}
