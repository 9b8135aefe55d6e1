package cli

import (
	"archive/zip"
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
}
