package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
)

func districtCreate(e *env, args []string) error {
	fs, db := flags(e, "district create")
	id := fs.String("id", "", "district id: letters, digits, '.', '_' or '-'")
	name := fs.String("name", "", "display name (default: the id)")
	tz := fs.String("tz", "UTC", "IANA time zone its reports tell their bounds in, e.g. America/Chicago")
	return withPlatform(e, fs, db, args, false, []string{"id"}, func(p *platform.Platform) error {
		d, err := p.CreateDistrict(e.ctx, *id, *name, *tz)
		if err == nil {
			fmt.Fprintf(e.stdout, "created district %s (%s, %s)\n", d.ID, d.Name, d.TimeZone)
		}
		return err
	})
}

func districtList(e *env, args []string) error {
	fs, db := flags(e, "district list")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		districts, err := p.Districts(e.ctx)
		table(e, "ID\tNAME\tTIME ZONE\tCREATED\tSCHOOLS", func(w io.Writer) {
			for _, d := range districts {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.TimeZone, analytics.FormatTime(d.Created), cmp.Or(strings.Join(d.Schools, ", "), "-"))
			}
		})
		return err
	})
}

func districtRename(e *env, args []string) error {
	fs, db := flags(e, "district rename")
	district := fs.String("district", "", "district id")
	name := fs.String("name", "", "the new display name")
	return withPlatform(e, fs, db, args, false, []string{"district", "name"}, func(p *platform.Platform) error {
		d, err := p.RenameDistrict(e.ctx, *district, *name)
		if err == nil {
			fmt.Fprintf(e.stdout, "renamed district %s: %s\n", d.ID, d.Name)
		}
		return err
	})
}

func districtDelete(e *env, args []string) error {
	fs, db := flags(e, "district delete")
	district := fs.String("district", "", "district id")
	return withPlatform(e, fs, db, args, false, []string{"district"}, func(p *platform.Platform) error {
		err := p.DeleteDistrict(e.ctx, *district)
		if err == nil {
			fmt.Fprintf(e.stdout, "deleted district %s, its keys and its digest recipients; its schools stay\n", *district)
		}
		return err
	})
}

func districtAttach(e *env, args []string) error {
	fs, db := flags(e, "district attach")
	district := fs.String("district", "", "district id")
	group := fs.String("group", "", "the school's group id")
	return withPlatform(e, fs, db, args, false, []string{"district", "group"}, func(p *platform.Platform) error {
		err := p.AttachSchool(e.ctx, *district, *group)
		if err == nil {
			fmt.Fprintf(e.stdout, "group %s is in district %s\n", *group, *district)
		}
		return err
	})
}

func districtDetach(e *env, args []string) error {
	fs, db := flags(e, "district detach")
	district := fs.String("district", "", "district id")
	group := fs.String("group", "", "the school's group id")
	return withPlatform(e, fs, db, args, false, []string{"district", "group"}, func(p *platform.Platform) error {
		err := p.DetachSchool(e.ctx, *district, *group)
		if err == nil {
			fmt.Fprintf(e.stdout, "group %s is no longer in district %s\n", *group, *district)
		}
		return err
	})
}

func districtKeyCreate(e *env, args []string) error {
	fs, db := flags(e, "district key create")
	district := fs.String("district", "", "district id")
	label := fs.String("label", "", "what the key is for")
	return withPlatform(e, fs, db, args, false, []string{"district"}, func(p *platform.Platform) error {
		k, secret, err := p.CreateDistrictKey(e.ctx, *district, *label)
		if err == nil {
			fmt.Fprintf(e.stdout, "created key %s for district %s. Its secret is shown only now:\n%s\n", k.ID, k.DistrictID, secret)
		}
		return err
	})
}

func districtKeyList(e *env, args []string) error {
	fs, db := flags(e, "district key list")
	district := fs.String("district", "", "district id")
	return withPlatform(e, fs, db, args, false, []string{"district"}, func(p *platform.Platform) error {
		keys, err := p.DistrictKeys(e.ctx, *district)
		table(e, "KEY\tPREFIX\tLABEL\tCREATED\tREVOKED\tLAST USED", func(w io.Writer) {
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.Label, analytics.FormatTime(k.Created), when(k.Revoked), when(k.LastUsed))
			}
		})
		return err
	})
}

func districtKeyRevoke(e *env, args []string) error {
	fs, db := flags(e, "district key revoke")
	district := fs.String("district", "", "district id")
	key := fs.String("key", "", "key id, as district key list shows it (or its prefix, gad_…)")
	return withPlatform(e, fs, db, args, false, []string{"district", "key"}, func(p *platform.Platform) error {
		id, err := keyIDOf(*key, analytics.DistrictKeyPrefix, func() ([]analytics.APIKey, error) { return p.DistrictKeys(e.ctx, *district) })
		if err != nil {
			return err
		}
		err = p.RevokeDistrictKey(e.ctx, *district, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "revoked key %s of district %s\n", id, *district)
		}
		return err
	})
}

// ownerName names a school's or a district's thing by its owner: "group
// north", "district river".
func ownerName(groupID, districtID string) string {
	if districtID != "" {
		return "district " + districtID
	}
	return "group " + groupID
}

// oneOwner checks that a command about a school's what or a district's
// was given one of --group and --district.
func oneOwner(command, what, group, district string) error {
	if (group == "") == (district == "") {
		return fmt.Errorf("%s takes --group ID (a school's %s) or --district ID (a district's), one of them", command, what)
	}
	return nil
}
