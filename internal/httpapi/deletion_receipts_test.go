package httpapi_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDeletionReceipts: erasing a student and deleting a group each leave
// a receipt, which says what went from each store, when and at whose
// request, and which outlives the group.
func TestDeletionReceipts(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *testEnv) {
		key := e.school("north", "UTC")
		e.school("south", "UTC")
		token := e.token()
		e.enrol("north", "s1", "Ada")
		e.send(message("north", "s1", "main", "2026-01-05T10:00:00Z"), message("north", "s1", "tutor_me", "2026-01-06T10:00:00Z"),
			message("north", "s2", "main", "2026-01-06T10:00:00Z"), message("south", "t1", "main", "2026-01-06T10:00:00Z"))
		e.reports("chat", key, "startDate=2026-01-01&endDate=2026-01-31") // stored where reports read (ClickHouse: applied)
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s1", token, "", http.StatusNoContent)
		// Asked again (its answer lost on the way), the erasure answers as it
		// did, and its receipt stands alone; a student never held is a 404.
		e.mustCall("DELETE", "/v1/admin/groups/north/students/s1", token, "", http.StatusNoContent)
		if resp := e.call("DELETE", "/v1/admin/groups/north/students/nobody", token, ""); resp.status != http.StatusNotFound {
			t.Errorf("erasing a student never held: %d, want 404", resp.status)
		}
		e.mustCall("DELETE", "/v1/admin/groups/north", token, "", http.StatusNoContent)

		receipts := e.mustCall("GET", "/v1/admin/receipts?groupId=north", token, "", http.StatusOK)["receipts"].([]any)
		if len(receipts) != 2 {
			t.Fatalf("north's receipts: %v, want 2 (the erasure asked twice has one)", receipts)
		}
		group, student := receipts[0].(map[string]any), receipts[1].(map[string]any)
		rows := func(r map[string]any) map[string]string {
			got := map[string]string{}
			for _, d := range r["deleted"].([]any) {
				d := d.(map[string]any)
				table := d["table"].(string)
				switch {
				case table == "usage_log":
					table = "events"
				case d["store"] == "clickhouse" && table == "students":
					table = "ordinals" // ClickHouse's numbers of students
				}
				n, _ := strconv.Atoi(got[table])
				m, _ := strconv.Atoi(d["rows"].(interface{ String() string }).String())
				got[table] = strconv.Itoa(n + m)
				if d["store"] == "" {
					t.Errorf("a count without its store: %v", d)
				}
			}
			return got
		}
		by := regexp.MustCompile(`^token tok_\w+ \(test\)$`)
		if student["action"] != "student erased" || student["studentId"] != "s1" || !by.MatchString(student["requestedBy"].(string)) {
			t.Errorf("the erasure's receipt: %v", student)
		}
		if got := rows(student); got["events"] != "2" || got["students"] != "1" {
			t.Errorf("the erasure deleted %v, want 2 events and 1 student", got)
		}
		if group["action"] != "group deleted" || group["studentId"] != nil || !by.MatchString(group["requestedBy"].(string)) {
			t.Errorf("the group's receipt: %v", group)
		}
		if got := rows(group); got["events"] != "1" || got["groups"] != "1" {
			t.Errorf("the group's deletion deleted %v, want s2's 1 event and the group", got)
		}
		if strings.Contains(string(e.call("GET", "/v1/admin/receipts", token, "").body), "Ada") {
			t.Error("a receipt names a student")
		}
		if all := e.mustCall("GET", "/v1/admin/receipts", token, "", http.StatusOK)["receipts"].([]any); len(all) != 2 {
			t.Errorf("every receipt: %d, want 2 (south deleted nothing)", len(all))
		}
		if resp := e.call("GET", "/v1/admin/receipts?group=north", token, ""); resp.status != http.StatusBadRequest {
			t.Errorf("an unknown parameter: %d, want 400", resp.status)
		}
	})
}
