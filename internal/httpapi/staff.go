package httpapi

import (
	"net/http"

	"groupanalytics/internal/analytics"
)

// staffJSON is a staff member as the admin API shows one.
type staffJSON struct {
	ID         string   `json:"id"`
	Email      string   `json:"email"`
	Name       string   `json:"name"`
	Role       string   `json:"role"`
	GroupID    *string  `json:"groupId"`
	DistrictID *string  `json:"districtId"`
	ClassIDs   []string `json:"classIds"`
	CreatedAt  string   `json:"createdAt"`
}

func toStaff(m analytics.Staff) staffJSON {
	orNull := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return staffJSON{m.ID, m.Email, m.Name, string(m.Role), orNull(m.GroupID), orNull(m.DistrictID),
		append([]string{}, m.ClassIDs...), analytics.FormatTime(m.Created)}
}

// addStaff serves POST …/staff of a school or a district.
func (s *Server) addStaff(r *http.Request) (int, any, error) {
	var in struct {
		Email    string   `json:"email"`
		Name     string   `json:"name"`
		Role     string   `json:"role"`
		ClassIDs []string `json:"classIds"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	m, err := s.platform.AddStaff(r.Context(), analytics.Staff{GroupID: r.PathValue("groupId"), DistrictID: r.PathValue("districtId"),
		Email: in.Email, Name: in.Name, Role: analytics.Role(in.Role), ClassIDs: in.ClassIDs})
	return http.StatusCreated, toStaff(m), err
}

// listStaff serves GET …/staff of a school or a district.
func (s *Server) listStaff(r *http.Request) (int, any, error) {
	staff, err := s.platform.StaffOf(r.Context(), r.PathValue("groupId"), r.PathValue("districtId"))
	return http.StatusOK, map[string]any{"staff": listOf(staff, toStaff)}, err
}

func (s *Server) removeStaff(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RemoveStaff(r.Context(), r.PathValue("staffId"))
}
