package analytics

import (
	"slices"
	"time"
)

// LTIPlatform is a learning management system (Canvas, Schoology, Moodle,
// any LTI 1.3 platform) registered for a school (GroupID) or a district
// (DistrictID): its issuer and the client id it gave this tool, the
// deployments it may launch from, and where its login, token and keys
// are. A launch of another issuer, client or deployment opens nothing.
type LTIPlatform struct {
	ID            string
	Name          string
	Issuer        string
	ClientID      string
	DeploymentIDs []string // in byte order; none: any of its client id's (TakesDeployment)
	AuthURL       string   // the platform's OIDC authorization endpoint
	TokenURL      string   // its OAuth 2.0 token endpoint, for its services
	JWKSURL       string   // its keys, which sign its launches
	GroupID       string
	DistrictID    string
	// MatchEmail lets a launch's person be matched to the school's staff
	// by their email when their roster id matches none: for an LMS whose
	// people cannot change their own email.
	MatchEmail bool
	Created    time.Time
}

// TakesDeployment tells whether the platform may launch from deployment
// id: one registered, or any when none is (a platform registered
// dynamically that named none: its deployments are the installs of the
// client id it gave this tool).
func (p LTIPlatform) TakesDeployment(id string) bool {
	return len(p.DeploymentIDs) == 0 || slices.Contains(p.DeploymentIDs, id)
}

// LTIRegistration is an invitation to an LMS to register itself for a
// school (GroupID) or a district (DistrictID) by LTI Dynamic
// Registration: the hash of the token its registration address carries,
// taken once, within LTIRegistrationLifetime of Created.
type LTIRegistration struct {
	TokenHash  []byte
	GroupID    string
	DistrictID string
	Created    time.Time
}

// LTIRegistrationLifetime is how long a registration address may be used.
const LTIRegistrationLifetime = 7 * 24 * time.Hour

// LTILogin is a launch's login begun and not yet finished: what the
// browser must bring back from the platform with its id_token, as a
// SignInAttempt is a sign-in's.
type LTILogin struct {
	StateHash   []byte
	BrowserHash []byte
	PlatformID  string
	Nonce       string
	// StorageTarget is the frame of the platform's storage the login was
	// offered (lti_storage_target), where it kept its state: "" when none.
	StorageTarget string
	// Query is the login's parameters, to begin it again in a new window.
	Query   string
	Created time.Time
}

// LTI roles a launch opens with: what the person may see.
const (
	LTIInstructor    = "instructor"    // the course's class, as its teacher would
	LTIAdministrator = "administrator" // the school or the district, as its administrator would
)

// LTISession is what a launch opened: for the person the platform named
// (its Subject, with their name and email), the course's class of a
// school, or a school or a district whole. It lasts as a sign-in's
// session does, and ends when its platform is removed.
type LTISession struct {
	TokenHash  []byte
	PlatformID string
	Subject    string
	Name       string
	Email      string
	Role       string // LTIInstructor or LTIAdministrator
	GroupID    string
	ClassID    string // an instructor's class, of GroupID
	DistrictID string // an administrator's district, when the platform is a district's
	StaffID    string // the staff member the person was matched to, if any: the session ends with them
	Created    time.Time
	Seen       time.Time
	Expires    time.Time
	Idle       time.Duration
}

// LTIToolKey is one of the tool's own keys, which sign what it sends
// platforms (its services' client assertions, its deep linking answers),
// published at its JWKS address. PrivatePEM is kept in the directory
// only.
type LTIToolKey struct {
	ID         string
	PrivatePEM string
	Created    time.Time
}
