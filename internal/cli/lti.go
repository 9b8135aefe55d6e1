package cli

import (
	"fmt"
	"io"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/httpapi"
	"groupanalytics/internal/platform"
)

func ltiPlatformAdd(e *env, args []string) error {
	fs, db := flags(e, "lti platform add")
	group := fs.String("group", "", "the school whose LMS it is")
	district := fs.String("district", "", "the district whose LMS it is, its schools' too (instead of --group)")
	id := fs.String("id", "", "its id here")
	name := fs.String("name", "", "what to call it, such as Canvas (default: the id)")
	issuer := fs.String("issuer", "", "the platform's issuer, as its launches name it, such as https://canvas.instructure.com")
	clientID := fs.String("client-id", "", "the client id the LMS gave this tool")
	var deployments flagList
	fs.Var(&deployments, "deployment", "a deployment id the LMS gave this tool; repeat it for each")
	authURL := fs.String("auth-url", "", "the LMS's OIDC authorization endpoint (authentication request URL)")
	tokenURL := fs.String("token-url", "", "the LMS's OAuth 2.0 token endpoint")
	jwksURL := fs.String("jwks-url", "", "the LMS's keyset URL")
	matchEmail := fs.Bool("match-email", false, "match its people to the school's staff by email too, not only by roster id (for an LMS whose people cannot change their email)")
	return withPlatform(e, fs, db, args, false, []string{"id", "issuer", "client-id", "auth-url", "token-url", "jwks-url"}, func(p *platform.Platform) error {
		if err := oneOwner("lti platform add", "LMS", *group, *district); err != nil {
			return err
		}
		lp, err := p.AddLTIPlatform(e.ctx, analytics.LTIPlatform{GroupID: *group, DistrictID: *district, ID: *id, Name: *name, Issuer: *issuer,
			ClientID: *clientID, DeploymentIDs: deployments, AuthURL: *authURL, TokenURL: *tokenURL, JWKSURL: *jwksURL, MatchEmail: *matchEmail})
		if err == nil {
			fmt.Fprintf(e.stdout, "registered LTI platform %s (%s, client %s) for %s: deployments %s\n", lp.ID, lp.Issuer, lp.ClientID,
				ownerName(lp.GroupID, lp.DistrictID), strings.Join(lp.DeploymentIDs, ", "))
		}
		return err
	})
}

func ltiPlatformRegisterURL(e *env, args []string) error {
	fs, db := flags(e, "lti platform register-url")
	group := fs.String("group", "", "the school whose LMS registers")
	district := fs.String("district", "", "the district whose LMS registers, for its schools too (instead of --group)")
	publicURL := fs.String("public-url", "", "the service's address as the LMS reaches it, as serve's --public-url")
	return withPlatform(e, fs, db, args, false, []string{"public-url"}, func(p *platform.Platform) error {
		if err := oneOwner("lti platform register-url", "LMS", *group, *district); err != nil {
			return err
		}
		token, r, err := p.CreateLTIRegistration(e.ctx, *group, *district)
		if err == nil {
			fmt.Fprintf(e.stdout, "%s\n(for %s: paste it into the LMS where it asks for a tool's registration URL; usable once, until %s)\n",
				httpapi.RegistrationURL(*publicURL, token), ownerName(r.GroupID, r.DistrictID),
				analytics.FormatTime(r.Created.Add(analytics.LTIRegistrationLifetime)))
		}
		return err
	})
}

func ltiPlatformList(e *env, args []string) error {
	fs, db := flags(e, "lti platform list")
	group := fs.String("group", "", "group id")
	district := fs.String("district", "", "district id (instead of --group)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		if err := oneOwner("lti platform list", "LMS", *group, *district); err != nil {
			return err
		}
		platforms, err := p.LTIPlatformsOf(e.ctx, *group, *district)
		table(e, "ID\tNAME\tISSUER\tCLIENT\tDEPLOYMENTS", func(w io.Writer) {
			for _, lp := range platforms {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", lp.ID, lp.Name, lp.Issuer, lp.ClientID, strings.Join(lp.DeploymentIDs, ","))
			}
		})
		return err
	})
}

func ltiPlatformRemove(e *env, args []string) error {
	fs, db := flags(e, "lti platform remove")
	id := fs.String("platform", "", "the platform's id")
	return withPlatform(e, fs, db, args, false, []string{"platform"}, func(p *platform.Platform) error {
		err := p.RemoveLTIPlatform(e.ctx, *id)
		if err == nil {
			fmt.Fprintf(e.stdout, "removed LTI platform %s: its launches' sessions have ended\n", *id)
		}
		return err
	})
}
