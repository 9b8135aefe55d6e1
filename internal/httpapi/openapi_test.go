package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
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
	loc := fmt.Sprintf("openapi.json#/paths/%s/%s/responses/%s", pointerEscape(tpl), strings.ToLower(method), status)
	documented, ok := op["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		t.Errorf("openapi: %s %s answered %d, which is not documented: %s", method, tpl, resp.status, resp.body)
		return
	}
	if ref, ok := documented["$ref"].(string); ok {
		loc = "openapi.json" + ref
		if documented, ok = d.resolve(ref).(map[string]any); !ok {
			t.Fatalf("openapi: %s does not resolve", ref)
		}
	}
	content, _ := documented["content"].(map[string]any)
	if content == nil {
		if len(resp.body) > 0 {
			t.Errorf("openapi: %s %s %d documents no body, got %s", method, tpl, resp.status, resp.body)
		}
	} else {
		ct := resp.header.Get("Content-Type")
		if _, ok := content[ct]; !ok {
			// A documented media type answers for any parameters.
			if media, _, err := mime.ParseMediaType(ct); err == nil && content[media] != nil {
				ct = media
			} else {
				t.Errorf("openapi: %s %s %d: Content-Type %q not documented", method, tpl, resp.status, ct)
				return
			}
		}
		loc += "/content/" + pointerEscape(ct) + "/schema"
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
		var body any = string(resp.body) // a text answer is a string to its schema
		if ct == "application/json" {
			var err error
			if body, err = jsonschema.UnmarshalJSON(bytes.NewReader(resp.body)); err != nil {
				t.Errorf("openapi: %s %s %d: body is not JSON: %s", method, tpl, resp.status, resp.body)
				return
			}
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

// resolve returns what a local $ref ("#/components/…") points at, or nil.
func (d *apiDoc) resolve(ref string) any {
	var node any = d.doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		obj, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = obj[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	return node
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

// TestOpenAPIDocumentIsKept lints the document: every $ref resolves, and
// every operation has an id (unique), a summary and an example (in it or
// in what it refers to).
func TestOpenAPIDocumentIsKept(t *testing.T) {
	d := openAPI()
	var refs []string
	var walk func(node any)
	walk = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			if ref, ok := n["$ref"].(string); ok {
				refs = append(refs, ref)
			}
			for _, v := range n {
				walk(v)
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	walk(d.doc)
	for _, ref := range refs {
		if !strings.HasPrefix(ref, "#/") || d.resolve(ref) == nil {
			t.Errorf("$ref %s does not resolve", ref)
		}
	}
	// hasExample looks for an example in node and in what it refers to.
	var hasExample func(node any, depth int) bool
	hasExample = func(node any, depth int) bool {
		switch n := node.(type) {
		case map[string]any:
			if _, ok := n["example"]; ok {
				return true
			}
			if _, ok := n["examples"]; ok {
				return true
			}
			if ref, ok := n["$ref"].(string); ok && depth < 8 && hasExample(d.resolve(ref), depth+1) {
				return true
			}
			for _, v := range n {
				if hasExample(v, depth) {
					return true
				}
			}
		case []any:
			for _, v := range n {
				if hasExample(v, depth) {
					return true
				}
			}
		}
		return false
	}
	ids := map[string]string{}
	for path, ops := range d.doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok {
				continue
			}
			name := strings.ToUpper(method) + " " + path
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s has no operationId", name)
			} else if other, dup := ids[id]; dup {
				t.Errorf("%s and %s share the operationId %s", name, other, id)
			}
			ids[id] = name
			if s, _ := op["summary"].(string); s == "" {
				t.Errorf("%s has no summary", name)
			}
			// Security said on each operation, [] where none is needed.
			if _, ok := op["security"]; !ok {
				t.Errorf("%s does not say its security", name)
			}
			has4xx := false
			for status := range op["responses"].(map[string]any) {
				has4xx = has4xx || strings.HasPrefix(status, "4")
			}
			if !has4xx {
				t.Errorf("%s documents no 4XX answer", name)
			}
			if !hasExample(op, 0) {
				t.Errorf("%s has no example", name)
			}
		}
	}
	if license, _ := d.doc["info"].(map[string]any)["license"].(map[string]any); license["name"] == nil ||
		(license["identifier"] == nil && license["url"] == nil) {
		t.Errorf("info.license %v: a name, and an identifier or a url", license)
	}
	if len(refs) < 100 {
		t.Errorf("only %d $refs: are responses and parameters shared?", len(refs))
	}
}

// TestOpenAPIExamplesMatchTheirSchemas validates the document with an
// OpenAPI library, kin-openapi (its structure, and every example against
// its schema: parameters', media types' and schemas' own), so that each
// example a reader copies is something the service takes or answers. The
// document broken in each of those places is refused, so that the check
// is not vacuous.
func TestOpenAPIExamplesMatchTheirSchemas(t *testing.T) {
	validate := func(doc []byte) error {
		loaded, err := openapi3.NewLoader().LoadFromData(doc)
		if err != nil {
			return err
		}
		return loaded.Validate(context.Background(), openapi3.EnableExamplesValidation())
	}
	if err := validate(httpapi.OpenAPI()); err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	for _, broken := range []struct{ what, from, to string }{
		{"a parameter's example of the wrong type", `"example": "1"`, `"example": 1`},
		{"a schema's example without a required field", `"keptFrom": null`, `"keptFromTypo": null`},
		{"a response's example without a required field", `"minCellSize": 0,`, ``},
	} {
		doc := strings.Replace(string(httpapi.OpenAPI()), broken.from, broken.to, 1)
		if doc == string(httpapi.OpenAPI()) {
			t.Fatalf("%s: %q is not in the document", broken.what, broken.from)
		}
		if err := validate([]byte(doc)); err == nil {
			t.Errorf("%s passes validation", broken.what)
		}
	}
}
