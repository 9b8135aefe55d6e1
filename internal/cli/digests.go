package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/digest"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/stores"
)

func recipientAdd(e *env, args []string) error {
	fs, db := flags(e, "recipient add")
	group := fs.String("group", "", "group id")
	address := fs.String("address", "", "email address")
	class := fs.String("class", "", "a class of the group: its teacher gets the class's digest (default: the school's)")
	return withPlatform(e, fs, db, args, false, []string{"group", "address"}, func(p *platform.Platform) error {
		r, err := p.AddRecipient(e.ctx, *group, *address, *class)
		switch {
		case err != nil:
		case r.ClassID != "":
			fmt.Fprintf(e.stdout, "%s will receive the weekly digest of class %s of group %s\n", r.Address, r.ClassID, r.GroupID)
		default:
			fmt.Fprintf(e.stdout, "%s will receive the weekly digest of group %s\n", r.Address, r.GroupID)
		}
		return err
	})
}

func recipientList(e *env, args []string) error {
	fs, db := flags(e, "recipient list")
	group := fs.String("group", "", "group id")
	return withPlatform(e, fs, db, args, false, []string{"group"}, func(p *platform.Platform) error {
		recipients, err := p.Recipients(e.ctx, *group)
		table(e, "ADDRESS\tADDED\tCLASS", func(w io.Writer) {
			for _, r := range recipients {
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.Address, analytics.FormatTime(r.Created), cmp.Or(r.ClassID, "-"))
			}
		})
		return err
	})
}

func recipientRemove(e *env, args []string) error {
	fs, db := flags(e, "recipient remove")
	group := fs.String("group", "", "group id")
	address := fs.String("address", "", "email address")
	return withPlatform(e, fs, db, args, false, []string{"group", "address"}, func(p *platform.Platform) error {
		err := p.RemoveRecipient(e.ctx, *group, *address)
		if err == nil {
			fmt.Fprintf(e.stdout, "%s will no longer receive the weekly digest of group %s\n", *address, *group)
		}
		return err
	})
}

func digestSend(e *env, args []string) error {
	fs, db := flags(e, "digest send")
	group := fs.String("group", "", "group id")
	to := fs.String("to", "", "the address to send it to")
	week := fs.String("week", "", "the ISO week, e.g. 2026-W46 (default: the last week that has ended)")
	mail := addMailFlags(fs)
	return withStores(e, fs, db, args, false, []string{"group", "to"}, func(s *stores.Stores) error {
		if mail.smtpURL == "" {
			return errors.New("digest send needs --smtp-url (and --public-url)")
		}
		sender, err := mail.sender(s, quietLog(e))
		if err != nil {
			return err
		}
		address, err := platform.CheckAddress(*to)
		if err != nil {
			return err
		}
		g, err := s.Directory.Group(e.ctx, *group)
		if err != nil {
			return err
		}
		loc, err := g.Location()
		if err != nil {
			return err
		}
		w := digest.DueWeek(time.Now(), loc)
		if *week != "" {
			if w, err = analytics.ParseWeek(*week); err != nil {
				return err
			}
		}
		if err := sender.SendTrial(e.ctx, g.ID, w, address); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "sent the digest of group %s for %s to %s\n", g.ID, w, address)
		return nil
	})
}
