package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
)

func keyCreate(e *env, args []string) error {
	fs, db := flags(e, "key create")
	group := fs.String("group", "", "group id")
	label := fs.String("label", "", "what the key is for")
	var classes flagList
	fs.Var(&classes, "class", "a class the key sees, and no other (a teacher's key); repeat it for each")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		k, secret, err := p.CreateKey(e.ctx, *group, *label, classes...)
		if err == nil {
			seeing := ""
			if k.ForClasses {
				seeing = ", seeing only " + sees(k)
			}
			fmt.Fprintf(e.stdout, "created key %s for group %s%s. Its secret is shown only now:\n%s\n", k.ID, k.GroupID, seeing, secret)
		}
		return err
	})
}

// flagList is a flag given once for each of its values.
type flagList []string

func (l *flagList) String() string { return strings.Join(*l, ",") }

func (l *flagList) Set(value string) error { *l = append(*l, value); return nil }

// sees says what a key sees: its group, or a teacher's key's classes.
func sees(k analytics.APIKey) string {
	if !k.ForClasses {
		return "the group"
	}
	return "class " + cmp.Or(strings.Join(k.Classes, ", "), "(none left)")
}

func keyList(e *env, args []string) error {
	fs, db := flags(e, "key list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		keys, err := p.Keys(e.ctx, *group)
		table(e, "KEY\tPREFIX\tLABEL\tCREATED\tREVOKED\tLAST USED\tSEES", func(w io.Writer) {
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Label, analytics.FormatTime(k.Created), when(k.Revoked), when(k.LastUsed), sees(k))
			}
		})
		return err
	})
}

func keyRevoke(e *env, args []string) error {
	fs, db := flags(e, "key revoke")
	group := fs.String("group", "", "group id")
	key := fs.String("key", "", "key id, as key list shows it (or its prefix, gak_…)")
	return withPlatform(e, fs, db, args, false, []string{"group", "key"}, func(p *platform.Platform) error {
		id, err := keyIDOf(*key, "gak_", func() ([]analytics.APIKey, error) { return p.Keys(e.ctx, *group) })
		if err != nil {
			return err
		}
		err = p.RevokeKey(e.ctx, *group, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "revoked key %s of group %s\n", id, *group)
		}
		return err
	})
}

// keyIDOf returns the id of the key given: its id, or the prefix its list
// shows (of a secret starting with kind) looked up in the keys listed.
func keyIDOf(given, kind string, list func() ([]analytics.APIKey, error)) (string, error) {
	if !strings.HasPrefix(given, kind) {
		return given, nil
	}
	keys, err := list()
	if err != nil {
		return "", err
	}
	return idOfPrefix(given, "key", keys, func(k analytics.APIKey) (string, string) { return k.ID, k.Prefix })
}

// idOfPrefix returns the id of the one key or token (what) whose prefix,
// as the lists show it (with or without its "…"), is given: operators
// copy it from there, and a secret is never shown again.
func idOfPrefix[T any](given, what string, items []T, idAndPrefix func(T) (string, string)) (string, error) {
	prefix := strings.TrimSuffix(given, "…")
	var matches []string
	for _, item := range items {
		if id, p := idAndPrefix(item); p == prefix {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("no %s has the prefix %q: give the %s id, as %s list shows it", what, given, what, what)
	default:
		return "", fmt.Errorf("%d %ss have the prefix %q: give the %s id instead (%s)", len(matches), what, prefix, what, strings.Join(matches, ", "))
	}
}

func tokenCreate(e *env, args []string) error {
	fs, db := flags(e, "token create")
	label := fs.String("label", "", "what the token is for")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		t, secret, err := p.CreateToken(e.ctx, *label)
		if err == nil {
			fmt.Fprintf(e.stdout, "created platform token %s. Its secret is shown only now:\n%s\n", t.ID, secret)
		}
		return err
	})
}

func tokenList(e *env, args []string) error {
	fs, db := flags(e, "token list")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		tokens, err := p.Tokens(e.ctx)
		table(e, "TOKEN\tPREFIX\tLABEL\tCREATED\tREVOKED", func(w io.Writer) {
			for _, t := range tokens {
				fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\n", t.ID, t.Prefix, t.Label, analytics.FormatTime(t.Created), when(t.Revoked))
			}
		})
		return err
	})
}

func tokenRevoke(e *env, args []string) error {
	fs, db := flags(e, "token revoke")
	token := fs.String("token", "", "token id, as token list shows it (or its prefix, gat_…)")
	return withPlatform(e, fs, db, args, false, []string{"token"}, func(p *platform.Platform) error {
		id := *token
		if strings.HasPrefix(id, "gat_") {
			tokens, err := p.Tokens(e.ctx)
			if err != nil {
				return err
			}
			if id, err = idOfPrefix(id, "token", tokens, func(t analytics.PlatformToken) (string, string) { return t.ID, t.Prefix }); err != nil {
				return err
			}
		}
		err := p.RevokeToken(e.ctx, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "revoked platform token %s\n", id)
		}
		return err
	})
}
