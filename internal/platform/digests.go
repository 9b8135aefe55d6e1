package platform

import (
	"context"
	"crypto/rand"
	"net/mail"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// AddRecipient gives a group's weekly digest to an email address: the
// school's, or a class's when classID is set (a class of the group).
func (p *Platform) AddRecipient(ctx context.Context, groupID, address, classID string) (analytics.Recipient, error) {
	if _, err := p.Group(ctx, groupID); err != nil {
		return analytics.Recipient{GroupID: groupID}, err
	}
	return p.addRecipient(ctx, analytics.Recipient{GroupID: groupID, ClassID: classID}, address)
}

// AddDistrictRecipient gives a district's weekly digest to an email
// address.
func (p *Platform) AddDistrictRecipient(ctx context.Context, districtID, address string) (analytics.Recipient, error) {
	if _, err := p.District(ctx, districtID); err != nil {
		return analytics.Recipient{DistrictID: districtID}, err
	}
	return p.addRecipient(ctx, analytics.Recipient{DistrictID: districtID}, address)
}

// addRecipient checks the address and adds r with it, and its
// unsubscribe token.
func (p *Platform) addRecipient(ctx context.Context, r analytics.Recipient, address string) (analytics.Recipient, error) {
	address, err := CheckAddress(address)
	if err != nil {
		return r, err
	}
	r.Address, r.Token, r.Created = address, "gau_"+rand.Text(), p.Now().UTC().Truncate(time.Millisecond)
	return r, p.Directory.AddRecipient(ctx, r)
}

// Recipients lists a group's digest recipients, by address.
func (p *Platform) Recipients(ctx context.Context, groupID string) ([]analytics.Recipient, error) {
	if _, err := p.Group(ctx, groupID); err != nil {
		return nil, err
	}
	return p.Directory.Recipients(ctx, groupID)
}

// DistrictRecipients lists a district's digest recipients, by address.
func (p *Platform) DistrictRecipients(ctx context.Context, districtID string) ([]analytics.Recipient, error) {
	if _, err := p.District(ctx, districtID); err != nil {
		return nil, err
	}
	return p.Directory.DistrictRecipients(ctx, districtID)
}

// RemoveRecipient stops a group's digest to an address.
func (p *Platform) RemoveRecipient(ctx context.Context, groupID, address string) error {
	if _, err := p.Group(ctx, groupID); err != nil {
		return err
	}
	return p.removeRecipient(ctx, analytics.Recipient{GroupID: groupID}, address)
}

// RemoveDistrictRecipient stops a district's digest to an address.
func (p *Platform) RemoveDistrictRecipient(ctx context.Context, districtID, address string) error {
	if _, err := p.District(ctx, districtID); err != nil {
		return err
	}
	return p.removeRecipient(ctx, analytics.Recipient{DistrictID: districtID}, address)
}

func (p *Platform) removeRecipient(ctx context.Context, r analytics.Recipient, address string) error {
	checked, err := CheckAddress(address)
	if err != nil {
		return err
	}
	r.Address = checked
	return p.Directory.RemoveRecipient(ctx, r)
}

// Unsubscribe removes the recipient of an unsubscribe link's token.
func (p *Platform) Unsubscribe(ctx context.Context, token string) (analytics.Recipient, error) {
	if !strings.HasPrefix(token, "gau_") || !storable(token) {
		return analytics.Recipient{}, analytics.ErrUnknownUnsubscribeToken
	}
	return p.Directory.Unsubscribe(ctx, token)
}

// CheckAddress validates an email address and returns it with its domain
// in lower case: a bare address (no display name), with a dot in its
// domain, of at most 254 characters.
func CheckAddress(address string) (string, error) {
	if address == "" {
		return "", invalid("Missing address")
	}
	bad := func(why string) (string, error) {
		return "", invalid("Invalid address %q: %s", address, why)
	}
	if len(address) > 254 || checkText("address", address, 254) != nil {
		return bad("expected an email address of at most 254 characters")
	}
	parsed, err := mail.ParseAddress(address)
	switch {
	case err != nil:
		return bad("expected an email address such as head@school.example")
	case parsed.Name != "" || parsed.Address != address:
		return bad("give the address alone, such as head@school.example")
	}
	at := strings.LastIndex(parsed.Address, "@")
	local, domain := parsed.Address[:at], parsed.Address[at+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, "[") {
		return bad("expected a domain name after the @, such as school.example")
	}
	return local + "@" + strings.ToLower(domain), nil
}
