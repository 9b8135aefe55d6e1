package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/stores/storetest"
)

// BenchmarkAuthorize checks a report key, as every report request does
// first: a school's valid key, a district's, and a key that is none.
func BenchmarkAuthorize(b *testing.B) {
	for _, d := range []string{"sqlite", "postgres"} {
		b.Run(d, func(b *testing.B) {
			store := withGroup(b, storetest.Open(b, d))
			ctx, now := context.Background(), time.Now()
			if _, err := store.AddPlan(ctx, analytics.Plan{GroupID: "g", Starts: now.Add(-time.Hour)}); err != nil {
				b.Fatal(err)
			}
			school := analytics.APIKey{GroupID: "g", ID: "k", Hash: analytics.HashSecret("school"), Prefix: "gak_", Created: now}
			if err := store.AddKey(ctx, school); err != nil {
				b.Fatal(err)
			}
			if err := store.CreateDistrict(ctx, analytics.District{ID: "d", Name: "d", TimeZone: "UTC"}); err != nil {
				b.Fatal(err)
			}
			if err := store.AttachSchool(ctx, "d", "g"); err != nil {
				b.Fatal(err)
			}
			district := analytics.APIKey{DistrictID: "d", ID: "dk", Hash: analytics.HashSecret("district"), Prefix: "gad_", Created: now}
			if err := store.AddDistrictKey(ctx, district); err != nil {
				b.Fatal(err)
			}
			for _, c := range []struct {
				name string
				hash []byte
				ok   bool
			}{{"school", school.Hash, true}, {"district", district.Hash, true}, {"none", analytics.HashSecret("none"), false}} {
				b.Run(c.name, func(b *testing.B) {
					for b.Loop() {
						if _, err := store.Authorize(ctx, c.hash, now); (err == nil) != c.ok {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
