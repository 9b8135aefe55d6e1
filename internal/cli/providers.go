package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
)

func providerAdd(e *env, args []string) error {
	fs, db := flags(e, "provider add")
	group := fs.String("group", "", "the school whose staff sign in with it")
	district := fs.String("district", "", "the district whose staff, and its schools', sign in with it (instead of --group)")
	id := fs.String("id", "", "its id, in the sign-in address")
	name := fs.String("name", "", "what its button says: Sign in with NAME (default: the id)")
	issuer := fs.String("issuer", "", "the provider's issuer URL, such as https://accounts.google.com")
	clientID := fs.String("client-id", "", "the client id the provider gave for this service")
	secretFile := fs.String("client-secret-file", "", "a file holding the client's secret (- for standard input), so that it is not in the shell's history")
	var domains flagList
	fs.Var(&domains, "domain", "an email domain it may sign in, such as lakeland.k12.example; repeat it for each")
	matchClaim := fs.String("match-claim", "", "match people by this claim, which holds their roster id (ClassLink: SourcedId), rather than by their verified email; needs --require-claim")
	skipDiscovery := fs.Bool("skip-discovery", false, "add it without reading the issuer's discovery document, where the provider is not reachable from here (the service reads it at the first sign-in)")
	var required flagList
	fs.Var(&required, "require-claim", "NAME=VALUE: a claim the provider must send with this value, such as TenantId=1234; repeat it for each")
	return withPlatform(e, fs, db, args, false, []string{"id", "issuer", "client-id", "client-secret-file"}, func(p *platform.Platform) error {
		if err := oneOwner("provider add", "staff", *group, *district); err != nil {
			return err
		}
		secret, err := readSecret(e, *secretFile, "client-secret-file")
		if err != nil {
			return err
		}
		claims := map[string]string{}
		for _, c := range required {
			name, value, ok := strings.Cut(c, "=")
			if !ok || name == "" {
				return fmt.Errorf("invalid --require-claim %q: expected NAME=VALUE, such as TenantId=1234", c)
			}
			claims[name] = value
		}
		pr, err := p.AddProvider(e.ctx, analytics.Provider{GroupID: *group, DistrictID: *district, ID: *id, Name: *name,
			Issuer: *issuer, ClientID: *clientID, ClientSecret: secret, EmailDomains: domains, MatchClaim: *matchClaim, RequiredClaims: claims}, *skipDiscovery)
		if err == nil {
			fmt.Fprintf(e.stdout, "added sign-in provider %s (%s) for %s: emails of %s\n", pr.ID, pr.Issuer, ownerName(pr.GroupID, pr.DistrictID),
				strings.Join(pr.EmailDomains, ", "))
		}
		return err
	})
}

// readSecret reads a secret from a file, or from standard input for "-",
// without its trailing newline; flag names the flag that gave the path.
func readSecret(e *env, path, flag string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("--%s: %w", flag, err)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

func providerList(e *env, args []string) error {
	fs, db := flags(e, "provider list")
	group := fs.String("group", "", "group id")
	district := fs.String("district", "", "district id (instead of --group)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		if err := oneOwner("provider list", "staff", *group, *district); err != nil {
			return err
		}
		providers, err := p.ProvidersOf(e.ctx, *group, *district)
		table(e, "ID\tNAME\tISSUER\tCLIENT\tDOMAINS", func(w io.Writer) {
			for _, pr := range providers {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", pr.ID, pr.Name, pr.Issuer, pr.ClientID, strings.Join(pr.EmailDomains, ","))
			}
		})
		return err
	})
}

func providerRemove(e *env, args []string) error {
	fs, db := flags(e, "provider remove")
	id := fs.String("provider", "", "the provider's id")
	return withPlatform(e, fs, db, args, false, []string{"provider"}, func(p *platform.Platform) error {
		err := p.RemoveProvider(e.ctx, *id)
		if err == nil {
			fmt.Fprintf(e.stdout, "removed sign-in provider %s\n", *id)
		}
		return err
	})
}
