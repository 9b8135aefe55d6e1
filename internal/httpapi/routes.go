package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"groupanalytics/internal/dashboard"
	"groupanalytics/internal/report"
)

// route is one route as the mux sees it: a method and a path pattern, the
// cap on the request's body, and the handler.
type route struct {
	pattern   string
	bodyLimit int64
	handler   http.HandlerFunc
}

// routes are every route of the service, one a line.
func (s *Server) routes() []route {
	own := []route{
		// The report API, behind a school's or a district's key (x-api-key),
		// or a signed-in staff member's session.
		{"POST /api/groups/live-lecture", maxReportBody, s.reports(report.LiveLecture)},
		{"POST /api/groups/chat", maxReportBody, s.reports(report.Chat)},
		{"GET /api/me", 0, s.withKey(s.keyMe)},
		{"GET /api/classes", 0, s.withKey(s.keyClasses)},
		{"GET /api/access-log", 0, s.withKey(s.keyAccessLog)},
		{"GET /api/adoption", 0, s.withKey(s.keyAdoption)},
		{"GET /api/last-use", 0, s.withKey(s.keyLastUse)},
		{"GET /api/warehouse-files", 0, s.withKey(s.keyWarehouseFiles)},

		// Staff sign-in (OpenID Connect) and sign-out.
		{"GET /signin", 0, s.signInByEmail},
		{"GET /oidc/callback", 0, s.signInCallback},
		{"GET /signin/{providerId}", 0, s.signInWith},
		{"POST /signout", 0, s.signOut},

		// The LTI 1.3 tool: a launch's login, its id_token posted back, and
		// the tool's keys.
		{"GET /lti/login", 0, s.ltiLogin},
		{"POST /lti/login", maxAdminBody, s.ltiLogin},
		{"POST /lti/launch", maxLaunchBody, s.ltiLaunch},
		{"GET /lti/jwks", 0, s.ltiJWKS},
		{"GET /lti/register", 0, s.ltiRegister},

		// The weekly digest's unsubscribe link, which needs no key.
		{"GET /unsubscribe", 0, s.unsubscribeForm},
		{"POST /unsubscribe", maxAdminBody, s.unsubscribe},

		// The API reference, the health checks and the dashboard.
		{"GET /openapi.json", 0, serveOpenAPI},
		{"GET /healthz", 0, s.healthz},
		{"GET /readyz", 0, s.readyz},
		{"GET /{$}", 0, dashboard.Page},
		{"GET /assets/{file...}", 0, s.asset},
	}
	return slices.Concat(own, s.platformRoutes())
}

// platformRoutes are the platform API's, behind a platform token
// (Authorization: Bearer).
func (s *Server) platformRoutes() []route {
	return []route{
		{"POST /v1/events", MaxEventsBody, s.withToken(s.ingest)},
		{"GET /v1/admin/groups", maxAdminBody, s.withToken(s.listGroups)},
		{"GET /v1/admin/receipts", maxAdminBody, s.withToken(s.listReceipts)},
		{"POST /v1/admin/groups", maxAdminBody, s.withToken(s.createGroup)},
		{"GET /v1/admin/groups/{groupId}", maxAdminBody, s.withToken(s.getGroup)},
		{"PATCH /v1/admin/groups/{groupId}", maxAdminBody, s.withToken(s.updateGroup)},
		{"DELETE /v1/admin/groups/{groupId}", maxAdminBody, s.withToken(s.deleteGroup)},
		{"GET /v1/admin/groups/{groupId}/plans", maxAdminBody, s.withToken(s.listPlans)},
		{"POST /v1/admin/groups/{groupId}/plans", maxAdminBody, s.withToken(s.addPlan)},
		{"POST /v1/admin/groups/{groupId}/plans/{planId}/cancel", maxAdminBody, s.withToken(s.cancelPlan)},
		{"GET /v1/admin/groups/{groupId}/keys", maxAdminBody, s.withToken(s.listKeys)},
		{"POST /v1/admin/groups/{groupId}/keys", maxAdminBody, s.withToken(s.createKey)},
		{"DELETE /v1/admin/groups/{groupId}/keys/{keyId}", maxAdminBody, s.withToken(s.revokeKey)},
		{"GET /v1/admin/groups/{groupId}/students", maxAdminBody, s.withToken(s.listStudents)},
		{"POST /v1/admin/groups/{groupId}/students", maxAdminBody, s.withToken(s.addStudent)},
		{"PATCH /v1/admin/groups/{groupId}/students/{studentId}", maxAdminBody, s.withToken(s.renameStudent)},
		{"DELETE /v1/admin/groups/{groupId}/students/{studentId}", maxAdminBody, s.withToken(s.deleteStudent)},
		{"GET /v1/admin/groups/{groupId}/students/{studentId}/export", maxAdminBody, s.withToken(s.exportStudent)},
		{"GET /v1/admin/groups/{groupId}/classes", maxAdminBody, s.withToken(s.listClasses)},
		{"POST /v1/admin/groups/{groupId}/classes", maxMembersBody, s.withToken(s.createClass)},
		{"GET /v1/admin/groups/{groupId}/classes/{classId}", maxAdminBody, s.withToken(s.getClass)},
		{"PATCH /v1/admin/groups/{groupId}/classes/{classId}", maxAdminBody, s.withToken(s.updateClass)},
		{"DELETE /v1/admin/groups/{groupId}/classes/{classId}", maxAdminBody, s.withToken(s.deleteClass)},
		{"PUT /v1/admin/groups/{groupId}/classes/{classId}/members", maxMembersBody, s.withToken(s.setClassMembers)},
		{"POST /v1/admin/groups/{groupId}/roster", maxRosterBody, s.withToken(s.importRoster)},
		{"GET /v1/admin/groups/{groupId}/access-log", maxAdminBody, s.withToken(s.adminAccessLog)},
		{"GET /v1/admin/groups/{groupId}/staff", maxAdminBody, s.withToken(s.listStaff)},
		{"POST /v1/admin/groups/{groupId}/staff", maxAdminBody, s.withToken(s.addStaff)},
		{"GET /v1/admin/groups/{groupId}/lti-platforms", maxAdminBody, s.withToken(s.listLTIPlatforms)},
		{"POST /v1/admin/groups/{groupId}/lti-platforms", maxAdminBody, s.withToken(s.addLTIPlatform)},
		{"POST /v1/admin/groups/{groupId}/lti-registrations", maxAdminBody, s.withToken(s.addLTIRegistration)},
		{"GET /v1/admin/groups/{groupId}/sign-in-providers", maxAdminBody, s.withToken(s.listProviders)},
		{"POST /v1/admin/groups/{groupId}/sign-in-providers", maxAdminBody, s.withToken(s.addProvider)},
		{"GET /v1/admin/groups/{groupId}/digest-recipients", maxAdminBody, s.withToken(s.listRecipients)},
		{"POST /v1/admin/groups/{groupId}/digest-recipients", maxAdminBody, s.withToken(s.addRecipient)},
		{"DELETE /v1/admin/groups/{groupId}/digest-recipients/{address}", maxAdminBody, s.withToken(s.removeRecipient)},
		{"GET /v1/admin/groups/{groupId}/warehouses", maxAdminBody, s.withToken(s.listWarehouses)},
		{"POST /v1/admin/groups/{groupId}/warehouses", maxAdminBody, s.withToken(s.addWarehouse)},
		{"GET /v1/admin/districts", maxAdminBody, s.withToken(s.listDistricts)},
		{"POST /v1/admin/districts", maxAdminBody, s.withToken(s.createDistrict)},
		{"GET /v1/admin/districts/{districtId}", maxAdminBody, s.withToken(s.getDistrict)},
		{"PATCH /v1/admin/districts/{districtId}", maxAdminBody, s.withToken(s.renameDistrict)},
		{"DELETE /v1/admin/districts/{districtId}", maxAdminBody, s.withToken(s.deleteDistrict)},
		{"PUT /v1/admin/districts/{districtId}/schools/{groupId}", maxAdminBody, s.withToken(s.attachSchool)},
		{"DELETE /v1/admin/districts/{districtId}/schools/{groupId}", maxAdminBody, s.withToken(s.detachSchool)},
		{"GET /v1/admin/districts/{districtId}/keys", maxAdminBody, s.withToken(s.listDistrictKeys)},
		{"POST /v1/admin/districts/{districtId}/keys", maxAdminBody, s.withToken(s.createDistrictKey)},
		{"DELETE /v1/admin/districts/{districtId}/keys/{keyId}", maxAdminBody, s.withToken(s.revokeDistrictKey)},
		{"POST /v1/admin/districts/{districtId}/roster", maxRosterBody, s.withToken(s.importDistrictRoster)},
		{"GET /v1/admin/districts/{districtId}/staff", maxAdminBody, s.withToken(s.listStaff)},
		{"POST /v1/admin/districts/{districtId}/staff", maxAdminBody, s.withToken(s.addStaff)},
		{"DELETE /v1/admin/staff/{staffId}", maxAdminBody, s.withToken(s.removeStaff)},
		{"GET /v1/admin/districts/{districtId}/lti-platforms", maxAdminBody, s.withToken(s.listLTIPlatforms)},
		{"POST /v1/admin/districts/{districtId}/lti-platforms", maxAdminBody, s.withToken(s.addLTIPlatform)},
		{"POST /v1/admin/districts/{districtId}/lti-registrations", maxAdminBody, s.withToken(s.addLTIRegistration)},
		{"DELETE /v1/admin/lti-platforms/{platformId}", maxAdminBody, s.withToken(s.removeLTIPlatform)},
		{"GET /v1/admin/districts/{districtId}/sign-in-providers", maxAdminBody, s.withToken(s.listProviders)},
		{"POST /v1/admin/districts/{districtId}/sign-in-providers", maxAdminBody, s.withToken(s.addProvider)},
		{"DELETE /v1/admin/sign-in-providers/{providerId}", maxAdminBody, s.withToken(s.removeProvider)},
		{"GET /v1/admin/districts/{districtId}/digest-recipients", maxAdminBody, s.withToken(s.listDistrictRecipients)},
		{"POST /v1/admin/districts/{districtId}/digest-recipients", maxAdminBody, s.withToken(s.addDistrictRecipient)},
		{"DELETE /v1/admin/districts/{districtId}/digest-recipients/{address}", maxAdminBody, s.withToken(s.removeDistrictRecipient)},
		{"GET /v1/admin/districts/{districtId}/warehouses", maxAdminBody, s.withToken(s.listWarehouses)},
		{"POST /v1/admin/districts/{districtId}/warehouses", maxAdminBody, s.withToken(s.addWarehouse)},
		{"GET /v1/admin/warehouses/{warehouseId}", maxAdminBody, s.withToken(s.getWarehouse)},
		{"DELETE /v1/admin/warehouses/{warehouseId}", maxAdminBody, s.withToken(s.removeWarehouse)},
		{"POST /v1/admin/warehouses/{warehouseId}/backfill", maxAdminBody, s.withToken(s.backfillWarehouse)},
	}
}

// mux registers the routes. Each path also answers every other method with
// a 405 and an Allow header, and any other path is a 404, both in JSON.
// Request bodies are cut off past their route's cap.
func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	var paths []string
	allow := map[string][]string{}
	for _, rt := range s.routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			setRoute(r, path)
			r.Body = http.MaxBytesReader(innermost(w), r.Body, rt.bodyLimit)
			rt.handler(w, r)
		})
		s.metrics.Route(path, method)
		if allow[path] == nil {
			paths = append(paths, path)
		}
		allow[path] = append(allow[path], method)
		if method == http.MethodGet {
			allow[path] = append(allow[path], http.MethodHead)
		}
	}
	for _, path := range paths {
		slices.Sort(allow[path])
		methods := strings.Join(allow[path], ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			setRoute(r, path)
			w.Header().Set("Allow", methods)
			s.writeStatus(w, r, http.StatusMethodNotAllowed, "Method not allowed")
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeStatus(w, r, http.StatusNotFound, "Not found")
	})
	return mux
}
