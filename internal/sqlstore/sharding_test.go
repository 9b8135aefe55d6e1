package sqlstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// groupTables are distributed by group_id in a sharded deployment (see
// docs/scaling.md): every statement on them must be routable to one group's shard.
// The small directory tables (groups, plans, api_keys, platform_tokens)
// are reference tables, copied to every node: a key is looked up by its
// hash before its group is known.
var groupTables = regexp.MustCompile(`\b(students|events|usage_groups|student_counts|group_rollups)\b`)

// statementText joins the string literals of a query expression, with
// "<expr>" for the parts computed at run time.
func statementText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		s, _ := strconv.Unquote(e.Value)
		return s
	case *ast.BinaryExpr:
		return statementText(e.X) + statementText(e.Y)
	}
	return "<expr>"
}

// TestEveryStatementIsScopedToAGroup reads the store's source: each SQL
// statement that names a group table (or a table chosen at run time)
// filters by group_id (or a list of them), joins keys whose first column is the group's id
// (selectKeyed), or inserts rows whose first column is group_id.
func TestEveryStatementIsScopedToAGroup(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			var stmt string
			switch {
			case sel.Sel.Name == "q" && len(call.Args) == 1:
				stmt = strings.Join(strings.Fields(statementText(call.Args[0])), " ")
				if strings.HasPrefix(stmt, "INSERT INTO <expr>") {
					return true // insertRows: its callers are checked below
				}
			case sel.Sel.Name == "insertRows" && len(call.Args) > 2:
				stmt = "INSERT INTO " + statementText(call.Args[2])
			case sel.Sel.Name == "selectKeyed" && len(call.Args) > 2:
				stmt = strings.Join(strings.Fields(statementText(call.Args[2])), " ")
			default:
				return true
			}
			if !groupTables.MatchString(stmt) && !strings.Contains(stmt, "FROM <expr>") {
				return true
			}
			checked++
			// A list of groups (inList, or a table of valuesOf)
			// scopes a district's read to its schools.
			scoped := strings.Contains(stmt, "group_id = ?") || strings.Contains(stmt, "group_id = k.k1") ||
				regexp.MustCompile(`WHERE (\w+\.)?group_id (<expr>|IN \(SELECT id FROM asked\))( AND|$)`).MatchString(stmt) ||
				regexp.MustCompile(`^INSERT INTO \w+ \(group_id,`).MatchString(stmt)
			if !scoped {
				t.Errorf("%s: a statement on a group table is not scoped to one group:\n%s", fset.Position(call.Pos()), stmt)
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("only %d statements checked: the test no longer sees the store's SQL", checked)
	}
}
