package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"groupanalytics/internal/httpapi"
)

// apiDoc checks real responses against the OpenAPI document: every response
// any test receives through testEnv.do goes through check.
type apiDoc struct {
	doc       map[string]any
	compiler  *jsonschema.Compiler
	templates []string
	mu        sync.Mutex
	schemas   map[string]*jsonschema.Schema
	seen      map[string]bool // "METHOD template status" answered and valid
}

var openAPI = sync.OnceValue(func() *apiDoc {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpapi.OpenAPI()))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", doc); err != nil {
		panic(err)
	}
	d := &apiDoc{doc: doc.(map[string]any), compiler: c, schemas: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
	for tpl := range d.doc["paths"].(map[string]any) {
		d.templates = append(d.templates, tpl)
	}
	// Literal templates before those with parameters.
	sort.Slice(d.templates, func(i, j int) bool {
		return strings.Count(d.templates[i], "{") < strings.Count(d.templates[j], "{")
	})
	return d
})

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

func (d *apiDoc) template(path string) string {
	for _, tpl := range d.templates {
		if regexp.MustCompile("^" + pathParam.ReplaceAllString(tpl, "[^/]+") + "$").MatchString(path) {
			return tpl
		}
	}
	return ""
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check validates one response against the document.
func (d *apiDoc) check(t testing.TB, method, path string, resp response) {
	t.Helper()
	tpl := d.template(path)
	if tpl == "" {
		if resp.status != http.StatusNotFound {
			t.Errorf("openapi: %s %s answered %d but the path is not documented", method, path, resp.status)
		}
		return
	}
	ops := d.doc["paths"].(map[string]any)[tpl].(map[string]any)
	op, ok := ops[strings.ToLower(method)].(map[string]any)
	if !ok {
		if resp.status != http.StatusMethodNotAllowed {
			t.Errorf("openapi: %s %s answered %d; the method is not documented", method, tpl, resp.status)
		}
		return
	}
	status := strconv.Itoa(resp.status)
	documented, ok := op["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		t.Errorf("openapi: %s %s answered %d, which is not documented: %s", method, tpl, resp.status, resp.body)
		return
	}
	content, _ := documented["content"].(map[string]any)
	if content == nil {
		if len(resp.body) > 0 {
			t.Errorf("openapi: %s %s %d documents no body, got %s", method, tpl, resp.status, resp.body)
		}
	} else {
		ct := resp.header.Get("Content-Type")
		if _, ok := content[ct]; !ok {
			t.Errorf("openapi: %s %s %d: Content-Type %q not documented", method, tpl, resp.status, ct)
			return
		}
		loc := fmt.Sprintf("openapi.json#/paths/%s/%s/responses/%s/content/%s/schema",
			pointerEscape(tpl), strings.ToLower(method), status, pointerEscape(ct))
		d.mu.Lock()
		sch, ok := d.schemas[loc]
		if !ok {
			var err error
			if sch, err = d.compiler.Compile(loc); err != nil {
				d.mu.Unlock()
				t.Fatalf("openapi: compile %s: %v", loc, err)
			}
			d.schemas[loc] = sch
		}
		d.mu.Unlock()
		body, err := jsonschema.UnmarshalJSON(bytes.NewReader(resp.body))
		if err != nil {
			t.Errorf("openapi: %s %s %d: body is not JSON: %s", method, tpl, resp.status, resp.body)
			return
		}
		// Reports all have one shape: of a long list, the first hundred
		// are checked, which keeps the differential test fast.
		if obj, ok := body.(map[string]any); ok {
			if reports, ok := obj["reports"].([]any); ok && len(reports) > 100 {
				obj["reports"] = reports[:100]
			}
		}
		if err := sch.Validate(body); err != nil {
			t.Errorf("openapi: %s %s %d: body does not match the document: %v\n%s", method, tpl, resp.status, err, truncate(resp.body))
			return
		}
	}
	d.mu.Lock()
	d.seen[method+" "+tpl+" "+status] = true
	d.mu.Unlock()
}

func truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// TestOpenAPIDocumentIsServed: /openapi.json is the embedded document, and
// it is valid JSON with every operation answering something documented.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		resp := e.do("GET", "/openapi.json", "", "")
		if resp.status != http.StatusOK || !bytes.Equal(resp.body, httpapi.OpenAPI()) {
			t.Fatalf("GET /openapi.json: %d", resp.status)
		}
		var doc map[string]any
		if err := json.Unmarshal(resp.body, &doc); err != nil || doc["openapi"] != "3.1.0" {
			t.Fatalf("not an OpenAPI 3.1 document: %v", err)
		}
	})
}
