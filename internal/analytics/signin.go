package analytics

import (
	"net"
	"time"
)

// Provider is an OpenID Connect identity provider that the staff of a
// school (GroupID) or of a district and its schools (DistrictID) sign in
// with: Google Workspace, Microsoft Entra ID, Clever, ClassLink or any
// other. Only verified emails of its EmailDomains are let in.
type Provider struct {
	// ID names it in the sign-in address (/signin/{id}).
	ID string
	// Name is what its button says: "Sign in with {Name}".
	Name         string
	Issuer       string
	ClientID     string
	ClientSecret string
	GroupID      string
	DistrictID   string
	// EmailDomains are the domains of the emails it may sign in, in
	// lower case and byte order.
	EmailDomains []string
	// MatchClaim, when set, names the claim that holds the person's
	// roster id (ClassLink's SourcedId, say): they are matched to the
	// staff a roster import brought by it, rather than by their verified
	// email. RequiredClaims are claims the provider must send with these
	// values (a tenant's id, where the issuer serves many), by name.
	MatchClaim     string
	RequiredClaims map[string]string
	Created        time.Time
}

// SignInAttempt is a sign-in begun and not yet finished: what the browser
// must bring back from the provider. StateHash names it (the hash of the
// state sent to the provider) and BrowserHash ties it to the browser
// that began it (the hash of a cookie), so that a sign-in finished in
// another browser, one's own login slipped into someone else's, fails.
type SignInAttempt struct {
	StateHash   []byte
	BrowserHash []byte
	ProviderID  string
	Nonce       string
	// Verifier is the PKCE code verifier, sent when the code is redeemed.
	Verifier string
	// ReturnTo is the service's own path the person is sent to after.
	ReturnTo string
	Created  time.Time
}

// Session is a signed-in person's: Staff as the directory has them now,
// and the provider they signed in with. It ends at Expires, or after Idle
// without a request, or when the person signs out or is taken off the
// staff.
type Session struct {
	TokenHash    []byte
	Staff        Staff
	ProviderID   string
	ProviderName string
	Created      time.Time
	Seen         time.Time
	Expires      time.Time
	Idle         time.Duration
}

// Person is who asked, when a signed-in session asked rather than a key:
// the staff member and the provider they signed in with, as the access
// log keeps them (the email and role as they were then).
type Person struct {
	StaffID    string
	Email      string
	Name       string
	Role       Role
	ProviderID string
}

// Loopback tells whether host is this machine's (localhost, or a loopback
// address), where http may stand in for https: in tests.
func Loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
