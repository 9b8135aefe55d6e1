package cli

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRosterImportCommand: roster import takes a bundle from a file, says
// what a dry run would change without changing it, then changes it; a bad
// bundle is refused with the place of the fault, and nothing imported.
func TestRosterImportCommand(t *testing.T) {
	db := newStore(t)
	mustRun(t, "group", "create", "--db", db, "--id", "north")
	bundle := func(files map[string]string) string {
		path := filepath.Join(t.TempDir(), "roster.zip")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		for name, text := range files {
			w, _ := zw.Create(name)
			w.Write([]byte(text))
		}
		zw.Close()
		f.Close()
		return path
	}
	manifest := "propertyName,value\nmanifest.version,1.0\noneroster.version,1.2\nfile.classes,bulk\nfile.users,bulk\nfile.enrollments,bulk\n"
	good := bundle(map[string]string{"manifest.csv": manifest,
		"classes.csv":     "sourcedId,status,dateLastModified,title,schoolSourcedId\nbio,,,Biology 7B,\nart,,,Art,\n",
		"users.csv":       "sourcedId,status,dateLastModified,givenName,familyName\ns1,,,Ada,Lovelace\ns2,,,Grace,Hopper\nt1,,,Ms,Ortiz\n",
		"enrollments.csv": "sourcedId,status,dateLastModified,classSourcedId,schoolSourcedId,userSourcedId,role\ne1,,,bio,,s1,student\ne2,,,bio,,s2,student\ne3,,,art,,s2,student\ne4,,,bio,,t1,teacher\n",
	})
	out := mustRun(t, "roster", "import", "--db", db, "--group", "north", "--dry-run", good)
	if want := "would import (dry run, nothing changed) " + good + " into group north: students 2 added, 0 renamed; classes 2 added, 0 changed, 0 deleted; memberships 3 added, 0 removed\n"; out != want {
		t.Errorf("dry run:\n%s\nwant\n%s", out, want)
	}
	if out := mustRun(t, "class", "list", "--db", db, "--group", "north"); strings.Count(out, "\n") != 1 {
		t.Errorf("a dry run made classes:\n%s", out)
	}
	mustRun(t, "roster", "import", "--db", db, "--group", "north", good)
	if out := mustRun(t, "class", "show", "--db", db, "--group", "north", "--id", "bio"); !strings.Contains(out, "s1       Ada Lovelace\ns2       Grace Hopper\n") || strings.Contains(out, "t1") {
		t.Errorf("imported:\n%s", out)
	}
	bad := bundle(map[string]string{"manifest.csv": manifest,
		"classes.csv":     "sourcedId,status,dateLastModified,title,schoolSourcedId\nbio,,,Biology 7B,\n",
		"users.csv":       "sourcedId,status,dateLastModified,givenName,familyName\ns3,,,New,Student\n",
		"enrollments.csv": "sourcedId,status,dateLastModified,classSourcedId,schoolSourcedId,userSourcedId,role\ne1,,,bio,,s3,student\ne2,,,chem,,s3,student\n",
	})
	code, _, errOut := run(t, "", "roster", "import", "--db", db, "--group", "north", bad)
	if want := `enrollments.csv line 3, column classSourcedId: no class "chem" in classes.csv or the group`; code == 0 || !strings.Contains(errOut, want) {
		t.Errorf("a bad bundle: exit %d, %q; want %q", code, errOut, want)
	}
	if out := mustRun(t, "student", "list", "--db", db, "--group", "north"); strings.Contains(out, "s3") {
		t.Errorf("a refused bundle enrolled a student:\n%s", out)
	}

	// A bulk file's tobedeleted rows are skipped and listed, not refused.
	exported := bundle(map[string]string{"manifest.csv": manifest + "file.orgs,bulk\n",
		"orgs.csv":        "sourcedId,status,dateLastModified,name,type,identifier,parentSourcedId\nd1,,,District,district,,\nnorth-high,,,North High,school,,d1\nannex,tobedeleted,2026-08-20T07:15:00Z,Annex,school,,d1\n",
		"classes.csv":     "sourcedId,status,dateLastModified,title,schoolSourcedId\nbio,,,Biology 7B,north-high\nold,tobedeleted,2026-08-20,Old,north-high\n",
		"users.csv":       "sourcedId,status,dateLastModified,givenName,familyName\ns1,,,Ada,Lovelace\n",
		"enrollments.csv": "sourcedId,status,dateLastModified,classSourcedId,schoolSourcedId,userSourcedId,role,primary,beginDate,endDate\ne1,,,bio,north-high,s1,student,,2026-08-24,\ne2,,,old,north-high,s1,student,,2025-08-25,2026-06-19\n",
	})
	out = mustRun(t, "roster", "import", "--db", db, "--group", "north", exported)
	if want := "imported " + exported + " into group north (school north-high): students 0 added, 0 renamed; classes 0 added, 1 changed, 0 deleted; memberships 0 added, 1 removed\n" +
		"skipped 3 rows:\n  classes.csv line 3 (old): tobedeleted in a bulk file\n  enrollments.csv line 3 (e2): its class old is tobedeleted in a bulk file\n" +
		"  orgs.csv line 4 (annex): tobedeleted in a bulk file\n"; out != want {
		t.Errorf("a bundle with tobedeleted rows:\n%s\nwant\n%s", out, want)
	}
	// Dates the service does not use, written loosely, are warnings: the
	// first 20 listed, then how many more.
	users := "sourcedId,status,dateLastModified,givenName,familyName\n"
	enrollments := "sourcedId,status,dateLastModified,classSourcedId,schoolSourcedId,userSourcedId,role\n"
	for i := range 22 {
		users += fmt.Sprintf("w%02d,,%d/05/2023,Student,%02d\n", i, i+1, i)
		enrollments += fmt.Sprintf("we%02d,,,bio,,w%02d,student\n", i, i)
	}
	loose := bundle(map[string]string{"manifest.csv": manifest, "users.csv": users, "enrollments.csv": enrollments,
		"classes.csv": "sourcedId,status,dateLastModified,title,schoolSourcedId\nbio,,,Biology 7B,\n"})
	out = mustRun(t, "roster", "import", "--db", db, "--group", "north", loose)
	if want := "22 warnings (cells not used and not read, their rows taken):\n" +
		"  users.csv line 2, column dateLastModified: \"1/05/2023\" is not an ISO 8601 date-time, such as 2026-02-28T09:30:00.000Z; not used, so the row is taken\n"; !strings.Contains(out, want) ||
		!strings.HasSuffix(out, "column dateLastModified: \"20/05/2023\" is not an ISO 8601 date-time, such as 2026-02-28T09:30:00.000Z; not used, so the row is taken\n  and 2 more\n") ||
		!strings.Contains(out, "students 22 added") {
		t.Errorf("a bundle with loose dates:\n%s", out)
	}
	// Refusals say what is wrong once, naming the flag as it is typed.
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"manifest.csv": manifest, "classes.csv": "sourcedId,status,dateLastModified,title,schoolSourcedId\nbio,,,Biology 7B,\n",
			"users.csv":       "sourcedId,status,givenName,familyName\ns1,,Ada,Lovelace\n",
			"enrollments.csv": "sourcedId,status,classSourcedId,schoolSourcedId,userSourcedId,role,beginDate\ne1,,bio,,s1,student,2026-02-30\n"},
			`groupanalytics roster import: ` + "%s" + ` refused, nothing imported: enrollments.csv line 2, column beginDate: "2026-02-30" is not an ISO 8601 date, such as 2026-02-28` + "\n"},
		{map[string]string{"manifest.csv": manifest + "file.orgs,bulk\n", "orgs.csv": "sourcedId,status,name,type\na,,A,school\nb,,B,school\n",
			"classes.csv": "sourcedId,status,title,schoolSourcedId\n", "users.csv": "sourcedId,status,givenName,familyName\n",
			"enrollments.csv": "sourcedId,status,classSourcedId,schoolSourcedId,userSourcedId,role\n"},
			"groupanalytics roster import: Invalid roster: orgs.csv has 2 schools (a, b): name the group's school with --org ORG_ID\n"},
	} {
		path := bundle(c.files)
		want := c.want
		if strings.Contains(want, "%s") {
			want = fmt.Sprintf(want, path)
		}
		if code, _, errOut := run(t, "", "roster", "import", "--db", db, "--group", "north", path); code != 1 || errOut != want {
			t.Errorf("exit %d, %q; want exit 1 and %q", code, errOut, want)
		}
	}
}
