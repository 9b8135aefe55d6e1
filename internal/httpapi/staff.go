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

// orNull is s, or null when it is empty.
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toStaff(m analytics.Staff) staffJSON {
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

// providerJSON is a sign-in provider as the admin API shows one: never
// its client secret.
type providerJSON struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Issuer       string   `json:"issuer"`
	ClientID     string   `json:"clientId"`
	GroupID      *string  `json:"groupId"`
	DistrictID   *string  `json:"districtId"`
	EmailDomains []string `json:"emailDomains"`
	// MatchClaim is null for a provider that matches by email.
	MatchClaim     *string           `json:"matchClaim"`
	RequiredClaims map[string]string `json:"requiredClaims"`
	CreatedAt      string            `json:"createdAt"`
}

func toProvider(p analytics.Provider) providerJSON {
	return providerJSON{p.ID, p.Name, p.Issuer, p.ClientID, orNull(p.GroupID), orNull(p.DistrictID),
		append([]string{}, p.EmailDomains...), orNull(p.MatchClaim), orEmpty(p.RequiredClaims), analytics.FormatTime(p.Created)}
}

// orEmpty is m, or an empty map for none: an object, never null.
func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// addProvider serves POST …/sign-in-providers of a school or a district.
func (s *Server) addProvider(r *http.Request) (int, any, error) {
	var in struct {
		ID             string            `json:"id"`
		Name           string            `json:"name"`
		Issuer         string            `json:"issuer"`
		ClientID       string            `json:"clientId"`
		ClientSecret   string            `json:"clientSecret"`
		EmailDomains   []string          `json:"emailDomains"`
		MatchClaim     string            `json:"matchClaim"`
		RequiredClaims map[string]string `json:"requiredClaims"`
		SkipDiscovery  bool              `json:"skipDiscovery"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	p, err := s.platform.AddProvider(r.Context(), analytics.Provider{GroupID: r.PathValue("groupId"), DistrictID: r.PathValue("districtId"),
		ID: in.ID, Name: in.Name, Issuer: in.Issuer, ClientID: in.ClientID, ClientSecret: in.ClientSecret, EmailDomains: in.EmailDomains,
		MatchClaim: in.MatchClaim, RequiredClaims: in.RequiredClaims}, in.SkipDiscovery)
	return http.StatusCreated, toProvider(p), err
}

// listProviders serves GET …/sign-in-providers of a school or a district.
func (s *Server) listProviders(r *http.Request) (int, any, error) {
	providers, err := s.platform.ProvidersOf(r.Context(), r.PathValue("groupId"), r.PathValue("districtId"))
	return http.StatusOK, map[string]any{"providers": listOf(providers, toProvider)}, err
}

func (s *Server) removeProvider(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RemoveProvider(r.Context(), r.PathValue("providerId"))
}
