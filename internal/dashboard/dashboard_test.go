package dashboard

import (
	"encoding/json"
	"io/fs"
	"os"
	"regexp"
	"testing"
)

// TestVendoredChartJSIsCurrent: the vendored Chart.js is the release
// web/package.json names, and, where `npm ci` has run in web/, the very
// file npm installed. After changing the version: cd web && npm install &&
// npm run vendor.
func TestVendoredChartJSIsCurrent(t *testing.T) {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	raw, err := os.ReadFile("../../web/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	vendored, err := fs.ReadFile(files, "vendor/chart.umd.min.js")
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`Chart\.js v(\S+)`).FindSubmatch(vendored)
	if version == nil || string(version[1]) != pkg.Dependencies["chart.js"] {
		t.Errorf("vendored Chart.js %q, web/package.json wants %q: run npm install && npm run vendor in web/", version, pkg.Dependencies["chart.js"])
	}
	if installed, err := os.ReadFile("../../web/node_modules/chart.js/dist/chart.umd.min.js"); err == nil && string(installed) != string(vendored) {
		t.Errorf("the vendored Chart.js differs from web/node_modules': run npm run vendor in web/")
	}
}
