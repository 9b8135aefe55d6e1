package httpapi

import (
	"html/template"
	"net/http"

	"groupanalytics/internal/analytics"
)

type recipientJSON struct {
	Address   string `json:"address"`
	CreatedAt string `json:"createdAt"`
	// ClassID: a class's teacher, who gets the class's digest.
	ClassID string `json:"classId,omitempty"`
}

func toRecipient(r analytics.Recipient) recipientJSON {
	return recipientJSON{r.Address, analytics.FormatTime(r.Created), r.ClassID}
}

func (s *Server) addRecipient(r *http.Request) (int, any, error) {
	var in struct {
		Address string `json:"address"`
		ClassID string `json:"classId"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	rcpt, err := s.platform.AddRecipient(r.Context(), r.PathValue("groupId"), in.Address, in.ClassID)
	return http.StatusCreated, toRecipient(rcpt), err
}

func (s *Server) listRecipients(r *http.Request) (int, any, error) {
	recipients, err := s.platform.Recipients(r.Context(), r.PathValue("groupId"))
	return http.StatusOK, map[string]any{"recipients": listOf(recipients, toRecipient)}, err
}

func (s *Server) removeRecipient(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RemoveRecipient(r.Context(), r.PathValue("groupId"), r.PathValue("address"))
}

func (s *Server) addDistrictRecipient(r *http.Request) (int, any, error) {
	var in struct {
		Address string `json:"address"`
	}
	if err := decodeBody(r, &in); err != nil {
		return 0, nil, err
	}
	rcpt, err := s.platform.AddDistrictRecipient(r.Context(), r.PathValue("districtId"), in.Address)
	return http.StatusCreated, toRecipient(rcpt), err
}

func (s *Server) listDistrictRecipients(r *http.Request) (int, any, error) {
	recipients, err := s.platform.DistrictRecipients(r.Context(), r.PathValue("districtId"))
	return http.StatusOK, map[string]any{"recipients": listOf(recipients, toRecipient)}, err
}

func (s *Server) removeDistrictRecipient(r *http.Request) (int, any, error) {
	return http.StatusNoContent, nil, s.platform.RemoveDistrictRecipient(r.Context(), r.PathValue("districtId"), r.PathValue("address"))
}

// unsubscribeForm is the page a digest's unsubscribe link opens: a button,
// so that a mail scanner that follows links does not unsubscribe anyone.
// A link without its token (cut short by a mail client) says so, rather
// than offer a button that cannot work.
func (s *Server) unsubscribeForm(w http.ResponseWriter, r *http.Request) {
	token := r.FormValue("token")
	if token == "" {
		writePage(w, http.StatusBadRequest, unsubscribeTemplate, unsubscribePage{Error: "This link has lost its token: open the whole link from the digest's email again."})
		return
	}
	writePage(w, http.StatusOK, unsubscribeTemplate, unsubscribePage{Token: token})
}

// unsubscribe removes the recipient of the link's token: the page's
// button, or a mail client's one-click unsubscribe (RFC 8058), which
// posts to the link itself. A token that is not one spends one of the
// address's failed checks, as a bad key does.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	addr, ok := s.screenAddress(w, r, now)
	if !ok {
		return
	}
	rcpt, err := s.platform.Unsubscribe(r.Context(), r.FormValue("token"))
	switch {
	case err == nil && rcpt.DistrictID != "":
		district, _ := s.platform.Directory.District(r.Context(), rcpt.DistrictID)
		writePage(w, http.StatusOK, unsubscribeTemplate, unsubscribePage{Done: true, Address: rcpt.Address, Group: district.Name})
	case err == nil:
		group, _ := s.platform.Directory.Group(r.Context(), rcpt.GroupID)
		writePage(w, http.StatusOK, unsubscribeTemplate, unsubscribePage{Done: true, Address: rcpt.Address, Group: group.Name})
	case analytics.ErrorCode(err) == analytics.NotFound:
		s.failedAuth(w, addr, now)
		writePage(w, http.StatusNotFound, unsubscribeTemplate, unsubscribePage{Error: analytics.ErrorMessage(err)})
	default:
		s.writeError(w, r, err)
	}
}

type unsubscribePage struct {
	Token, Error   string
	Done           bool
	Address, Group string
}

var unsubscribeTemplate = template.Must(template.New("unsubscribe").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Weekly digest: unsubscribe</title>
<style>body{font-family:system-ui,sans-serif;max-width:32em;margin:3em auto;padding:0 1em;color:#1f2328}button{font:inherit;padding:.4em 1em}</style>
</head><body>
<h1>Weekly digest</h1>
{{if .Done}}<p>{{.Address}} will no longer receive the weekly digest{{with .Group}} of {{.}}{{end}}.</p>
{{else if .Error}}<p>{{.Error}}</p>
{{else}}<p>Stop the weekly digest to this address?</p>
<form method="post"><input type="hidden" name="token" value="{{.Token}}"><button type="submit">Unsubscribe</button></form>
{{end}}</body></html>
`))
