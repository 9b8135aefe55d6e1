package analytics

import "time"

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
	Created      time.Time
}
