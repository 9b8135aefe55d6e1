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
	district := fs.String("district", "", "district id: the district's digest, its schools compared (instead of --group)")
	address := fs.String("address", "", "email address")
	class := fs.String("class", "", "a class of the group: its teacher gets the class's digest (default: the school's)")
	return withPlatform(e, fs, db, args, false, []string{"address"}, func(p *platform.Platform) error {
		if err := oneOwner("recipient add", "digest", *group, *district); err != nil {
			return err
		}
		var r analytics.Recipient
		var err error
		if *district != "" {
			if *class != "" {
				return errors.New("recipient add --district takes no --class: a district's digest is its schools'")
			}
			r, err = p.AddDistrictRecipient(e.ctx, *district, *address)
		} else {
			r, err = p.AddRecipient(e.ctx, *group, *address, *class)
		}
		switch {
		case err != nil:
		case r.DistrictID != "":
			fmt.Fprintf(e.stdout, "%s will receive the weekly digest of district %s\n", r.Address, r.DistrictID)
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
	district := fs.String("district", "", "district id (instead of --group)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		if err := oneOwner("recipient list", "digest", *group, *district); err != nil {
			return err
		}
		var recipients []analytics.Recipient
		var err error
		if *district != "" {
			recipients, err = p.DistrictRecipients(e.ctx, *district)
		} else {
			recipients, err = p.Recipients(e.ctx, *group)
		}
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
	district := fs.String("district", "", "district id (instead of --group)")
	address := fs.String("address", "", "email address")
	return withPlatform(e, fs, db, args, false, []string{"address"}, func(p *platform.Platform) error {
		if err := oneOwner("recipient remove", "digest", *group, *district); err != nil {
			return err
		}
		if *district != "" {
			err := p.RemoveDistrictRecipient(e.ctx, *district, *address)
			if err == nil {
				fmt.Fprintf(e.stdout, "%s will no longer receive the weekly digest of district %s\n", *address, *district)
			}
			return err
		}
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
	district := fs.String("district", "", "district id: the district's digest (instead of --group)")
	to := fs.String("to", "", "the address to send it to")
	week := fs.String("week", "", "the ISO week, e.g. 2026-W46 (default: the last week that has ended)")
	mail := addMailFlags(fs)
	return withStores(e, fs, db, args, false, []string{"to"}, func(s *stores.Stores) error {
		if err := oneOwner("digest send", "digest", *group, *district); err != nil {
			return err
		}
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
		// The week due in the owner's zone, unless one is named.
		zone, send := "", sender.SendTrial
		if *district != "" {
			d, err := s.Directory.District(e.ctx, *district)
			if err != nil {
				return err
			}
			zone, send = d.TimeZone, sender.SendDistrictTrial
		} else {
			g, err := s.Directory.Group(e.ctx, *group)
			if err != nil {
				return err
			}
			zone = g.TimeZone
		}
		loc, err := analytics.LoadZone(zone)
		if err != nil {
			return err
		}
		w := digest.DueWeek(time.Now(), loc)
		if *week != "" {
			if w, err = analytics.ParseWeek(*week); err != nil {
				return err
			}
		}
		if err := send(e.ctx, cmp.Or(*district, *group), w, address); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "sent the digest of %s for %s to %s\n", ownerName(*group, *district), w, address)
		return nil
	})
}
