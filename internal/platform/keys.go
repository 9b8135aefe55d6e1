package platform

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"time"

	"groupanalytics/internal/analytics"
)

// newSecret returns a fresh secret with a kind prefix, its display prefix
// and a short random id.
func newSecret(kind string) (secret, prefix, id string) {
	secret = kind + "_" + rand.Text()
	return secret, secret[:len(kind)+5], strings.ToLower(rand.Text()[:10])
}

// MaxKeyClasses caps the classes of a teacher's key.
const MaxKeyClasses = 100

// CreateKey creates a report key for a group and returns it with its
// secret, which is not stored and cannot be shown again. Given classes,
// it is a teacher's key, which sees those classes of the group only.
func (p *Platform) CreateKey(ctx context.Context, groupID, label string, classIDs ...string) (analytics.APIKey, string, error) {
	if label != "" {
		if err := checkText("label", label, 200); err != nil {
			return analytics.APIKey{}, "", err
		}
	}
	if err := knownGroup(groupID); err != nil {
		return analytics.APIKey{}, "", err
	}
	classIDs = slices.Compact(slices.Sorted(slices.Values(classIDs)))
	if len(classIDs) > MaxKeyClasses {
		return analytics.APIKey{}, "", invalid("Invalid classIds: at most %d classes a key, got %d", MaxKeyClasses, len(classIDs))
	}
	for _, id := range classIDs {
		if !storable(id) {
			return analytics.APIKey{}, "", invalid("Invalid classIds: no class %q in group %q", id, groupID)
		}
	}
	secret, prefix, id := newSecret("gak")
	k := analytics.APIKey{GroupID: groupID, ID: "key_" + id, Prefix: prefix, Label: label,
		Hash: analytics.HashSecret(secret), Created: p.Now().UTC().Truncate(time.Millisecond),
		ForClasses: len(classIDs) > 0, Classes: classIDs}
	if err := p.Directory.AddKey(ctx, k); err != nil {
		return k, "", err
	}
	return k, secret, nil
}

// Keys lists a group's keys, without secrets.
func (p *Platform) Keys(ctx context.Context, groupID string) ([]analytics.APIKey, error) {
	if err := knownGroup(groupID); err != nil {
		return nil, err
	}
	return p.Directory.Keys(ctx, groupID)
}

// RevokeKey stops a key from working, from now on.
func (p *Platform) RevokeKey(ctx context.Context, groupID, keyID string) error {
	if err := knownGroup(groupID); err != nil || !storable(keyID) {
		return analytics.Errorf(analytics.NotFound, "Key %q of group %q not found", keyID, groupID)
	}
	return p.Directory.RevokeKey(ctx, groupID, keyID, p.Now().UTC())
}

// CreateToken creates a platform token and returns its secret, which is
// not stored and cannot be shown again.
func (p *Platform) CreateToken(ctx context.Context, label string) (analytics.PlatformToken, string, error) {
	if label != "" {
		if err := checkText("label", label, 200); err != nil {
			return analytics.PlatformToken{}, "", err
		}
	}
	secret, prefix, id := newSecret("gat")
	t := analytics.PlatformToken{ID: "tok_" + id, Prefix: prefix, Label: label,
		Hash: analytics.HashSecret(secret), Created: p.Now().UTC().Truncate(time.Millisecond)}
	if err := p.Directory.AddToken(ctx, t); err != nil {
		return t, "", err
	}
	return t, secret, nil
}

// Tokens lists the platform tokens, without secrets.
func (p *Platform) Tokens(ctx context.Context) ([]analytics.PlatformToken, error) {
	return p.Directory.Tokens(ctx)
}

// RevokeToken stops a platform token from working, from now on: at once
// through this Platform, within recentFor through others (a running
// service, when the CLI revokes).
func (p *Platform) RevokeToken(ctx context.Context, tokenID string) error {
	if !storable(tokenID) {
		return analytics.Errorf(analytics.NotFound, "Token %q not found", tokenID)
	}
	if err := p.Directory.RevokeToken(ctx, tokenID, p.Now().UTC()); err != nil {
		return err
	}
	p.tokens.forgetWhere(func(t analytics.PlatformToken) bool { return t.ID == tokenID })
	return nil
}

// AuthorizeToken returns the unrevoked platform token whose secret this
// is, or an Unauthenticated error. A token accepted is not read again for
// recentFor.
func (p *Platform) AuthorizeToken(ctx context.Context, secret string) (analytics.PlatformToken, error) {
	hash, now := string(analytics.HashSecret(secret)), time.Now()
	if t, ok := p.tokens.get(hash, now); ok {
		return t, nil
	}
	t, err := p.Directory.AuthorizeToken(ctx, []byte(hash))
	if err == nil {
		p.tokens.put(hash, t, now, recentFor)
	}
	return t, err
}
