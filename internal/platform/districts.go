package platform

import (
	"context"
	"time"

	"groupanalytics/internal/analytics"
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
	secret, prefix, id := newSecret("gad")
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
