package cli

import (
	"cmp"
	"fmt"
	"io"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/platform"
	"groupanalytics/internal/warehouse"
)

func warehouseAdd(e *env, args []string) error {
	fs, db := flags(e, "warehouse add")
	group := fs.String("group", "", "the school whose files it takes")
	district := fs.String("district", "", "the district whose schools' files it takes (instead of --group)")
	id := fs.String("id", "", "its id")
	format := fs.String("format", analytics.FormatParquet, "parquet or csv")
	endpoint := fs.String("endpoint", "", "the S3-compatible store's address, such as https://s3.us-east-1.amazonaws.com")
	region := fs.String("region", "", "the bucket's region (default us-east-1)")
	bucket := fs.String("bucket", "", "the bucket")
	prefix := fs.String("prefix", "", "where in the bucket the files go (default: at the top)")
	accessKey := fs.String("access-key-id", "", "the owner's access key id")
	secretFile := fs.String("secret-access-key-file", "", "a file holding the secret access key (- for standard input), so that it is not in the shell's history")
	folder := fs.String("folder", "", "instead of a bucket: a folder under serve's --warehouse-dir")
	return withPlatform(e, fs, db, args, false, []string{"id"}, func(p *platform.Platform) error {
		if err := oneOwner("warehouse add", "warehouse", *group, *district); err != nil {
			return err
		}
		w := analytics.Warehouse{GroupID: *group, DistrictID: *district, ID: *id, Format: *format, Folder: *folder,
			Endpoint: *endpoint, Region: *region, Bucket: *bucket, Prefix: *prefix, AccessKey: *accessKey}
		if *secretFile != "" {
			secret, err := readSecret(e, *secretFile, "secret-access-key-file")
			if err != nil {
				return err
			}
			w.SecretKey = secret
		}
		w, err := p.AddWarehouse(e.ctx, w, warehouse.Try)
		if err == nil {
			fmt.Fprintf(e.stdout, "added warehouse %s for %s: %s files to %s, daily from %s\n", w.ID, ownerName(w.GroupID, w.DistrictID),
				w.Format, warehouse.Destination(w), w.From)
		}
		return err
	})
}

func warehouseList(e *env, args []string) error {
	fs, db := flags(e, "warehouse list")
	group := fs.String("group", "", "group id")
	district := fs.String("district", "", "district id (instead of --group)")
	return withPlatform(e, fs, db, args, false, nil, func(p *platform.Platform) error {
		if err := oneOwner("warehouse list", "warehouses", *group, *district); err != nil {
			return err
		}
		ws, err := p.WarehousesOf(e.ctx, *group, *district)
		table(e, "ID\tFORMAT\tDESTINATION\tFROM", func(w io.Writer) {
			for _, wh := range ws {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", wh.ID, wh.Format, warehouse.Destination(wh), wh.From)
			}
		})
		return err
	})
}

func warehouseShow(e *env, args []string) error {
	fs, db := flags(e, "warehouse show")
	id := fs.String("warehouse", "", "the warehouse's id")
	return withPlatform(e, fs, db, args, false, []string{"warehouse"}, func(p *platform.Platform) error {
		w, st, err := p.Warehouse(e.ctx, *id)
		if err != nil {
			return err
		}
		lastRun := "never"
		if !st.LastRun.IsZero() {
			lastRun = analytics.FormatTime(st.LastRun)
		}
		fmt.Fprintf(e.stdout, "warehouse %s of %s: %s files to %s, daily from %s\n", w.ID, ownerName(w.GroupID, w.DistrictID), w.Format,
			warehouse.Destination(w), w.From)
		fmt.Fprintf(e.stdout, "days queued: %d; last run: %s\n", st.Queued, lastRun)
		if st.Failures > 0 {
			fmt.Fprintf(e.stdout, "failing: %d runs in a row, tried again at %s: %s\n", st.Failures, analytics.FormatTime(st.RetryAt),
				cmp.Or(st.LastError, "(no reason kept)"))
		}
		return nil
	})
}

func warehouseRemove(e *env, args []string) error {
	fs, db := flags(e, "warehouse remove")
	id := fs.String("warehouse", "", "the warehouse's id")
	return withPlatform(e, fs, db, args, false, []string{"warehouse"}, func(p *platform.Platform) error {
		err := p.RemoveWarehouse(e.ctx, *id)
		if err == nil {
			fmt.Fprintf(e.stdout, "removed warehouse %s (its files stay where they are)\n", *id)
		}
		return err
	})
}

func warehouseBackfill(e *env, args []string) error {
	fs, db := flags(e, "warehouse backfill")
	id := fs.String("warehouse", "", "the warehouse's id")
	start := fs.String("start", "", "the first day, YYYY-MM-DD")
	end := fs.String("end", "", "the last day, YYYY-MM-DD")
	return withPlatform(e, fs, db, args, false, []string{"warehouse", "start", "end"}, func(p *platform.Platform) error {
		n, err := p.Backfill(e.ctx, *id, *start, *end)
		if err == nil {
			fmt.Fprintf(e.stdout, "queued %d school days of warehouse %s: serve delivers them in its next runs\n", n, *id)
		}
		return err
	})
}
