package httpapi

import (
	"net/http"

	"groupanalytics/internal/analytics"
)

// districtJSON is a district as the admin API shows it.
type districtJSON struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	TimeZone  string   `json:"timeZone"`
	CreatedAt string   `json:"createdAt"`
	SchoolIDs []string `json:"schoolIds"`
}

func toDistrict(d analytics.District) districtJSON {
	return districtJSON{d.ID, d.Name, d.TimeZone, analytics.FormatTime(d.Created), append([]string{}, d.Schools...)}
}

// districtKeyJSON is a district's key as the admin API shows it.
type districtKeyJSON struct {
	ID         string  `json:"id"`
	DistrictID string  `json:"districtId"`
	Prefix     string  `json:"prefix"`
	Label      string  `json:"label"`
	CreatedAt  string  `json:"createdAt"`
	RevokedAt  *string `json:"revokedAt"`
	LastUsedAt *string `json:"lastUsedAt"`
	Key        string  `json:"key,omitempty"` // only when created
}

func toDistrictKey(k analytics.APIKey) districtKeyJSON {
	return districtKeyJSON{ID: k.ID, DistrictID: k.DistrictID, Prefix: k.Prefix, Label: k.Label,
		CreatedAt: analytics.FormatTime(k.Created), RevokedAt: optionalTime(k.Revoked), LastUsedAt: optionalTime(k.LastUsed)}
}

func (s *Server) createDistrict(r *http.Request) (int, any, error) {
	var in createBody
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	d, err := s.platform.CreateDistrict(r.Context(), in.ID, in.Name, in.TimeZone)
	return http.StatusCreated, toDistrict(d), err
}

func (s *Server) listDistricts(r *http.Request) (int, any, error) {
	districts, err := s.platform.Districts(r.Context())
	return http.StatusOK, map[string]any{"districts": listOf(districts, toDistrict)}, err
}

func (s *Server) getDistrict(r *http.Request) (int, any, error) {
	d, err := s.platform.District(r.Context(), r.PathValue("districtId"))
	return http.StatusOK, toDistrict(d), err
}

func (s *Server) renameDistrict(r *http.Request) (int, any, error) {
	var in struct {
		Name *string `json:"name"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	if in.Name == nil {
		return 0, nil, analytics.Errorf(analytics.Invalid, "Invalid body: give the name")
	}
	d, err := s.platform.RenameDistrict(r.Context(), r.PathValue("districtId"), *in.Name)
	return http.StatusOK, toDistrict(d), err
}

func (s *Server) deleteDistrict(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.DeleteDistrict(r.Context(), r.PathValue("districtId"))
}

// attachSchool puts a school in the district and answers the district.
func (s *Server) attachSchool(r *http.Request) (int, any, error) {
	id := r.PathValue("districtId")
	if err := s.platform.AttachSchool(r.Context(), id, r.PathValue("groupId")); err != nil {
		return 0, nil, err
	}
	d, err := s.platform.District(r.Context(), id)
	return http.StatusOK, toDistrict(d), err
}

func (s *Server) detachSchool(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.DetachSchool(r.Context(), r.PathValue("districtId"), r.PathValue("groupId"))
}

func (s *Server) createDistrictKey(r *http.Request) (int, any, error) {
	var in struct {
		Label string `json:"label"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	k, secret, err := s.platform.CreateDistrictKey(r.Context(), r.PathValue("districtId"), in.Label)
	out := toDistrictKey(k)
	out.Key = secret
	return http.StatusCreated, out, err
}

func (s *Server) listDistrictKeys(r *http.Request) (int, any, error) {
	keys, err := s.platform.DistrictKeys(r.Context(), r.PathValue("districtId"))
	return http.StatusOK, map[string]any{"keys": listOf(keys, toDistrictKey)}, err
}

func (s *Server) revokeDistrictKey(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RevokeDistrictKey(r.Context(), r.PathValue("districtId"), r.PathValue("keyId"))
}
