package httpapi

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"groupanalytics/internal/analytics"
	"groupanalytics/internal/lti"
)

// The tool's side of LTI Advantage's services: its keys, which sign what
// it asks of a platform, and Names and Role Provisioning, which gives a
// class made for a course its members (docs/decisions.md, LTI).

// ltiToolKeys returns the tool's key that signs now and those it
// publishes, making a new key when one is due (lti.ToolKeys).
func (s *Server) ltiToolKeys(ctx context.Context) (analytics.LTIToolKey, []analytics.LTIToolKey, error) {
	dir := s.engine.Directory
	keys, err := dir.LTIToolKeys(ctx)
	if err != nil {
		return analytics.LTIToolKey{}, nil, err
	}
	now := s.now()
	signing, published, due := lti.ToolKeys(keys, now)
	if due {
		k, err := lti.NewToolKey(now)
		if err == nil {
			err = dir.AddLTIToolKey(ctx, k)
		}
		if err != nil {
			return analytics.LTIToolKey{}, nil, err
		}
		signing, published, _ = lti.ToolKeys(append([]analytics.LTIToolKey{k}, keys...), now)
	}
	return signing, published, nil
}

// ltiJWKS serves the tool's public keys (GET /lti/jwks).
func (s *Server) ltiJWKS(w http.ResponseWriter, r *http.Request) {
	_, published, err := s.ltiToolKeys(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	set, err := lti.PublicKeys(published)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, set)
}

// courseSyncEvery is how often a class made for a course takes its
// members from the platform again: at a launch, at most this often.
const courseSyncEvery = 24 * time.Hour

// courseSyncTimeout bounds a sync, which a launch waits for.
const courseSyncTimeout = 20 * time.Second

// courseSyncs notes when each class made for a course last took its
// members, in this process.
type courseSyncs struct {
	mu   sync.Mutex
	last map[string]time.Time // by group and class
}

// due tells whether the class is to take its members now, and if so
// notes it as taking them.
func (c *courseSyncs) due(groupID, classID string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := groupID + "\x00" + classID
	if last, ok := c.last[key]; ok && now.Sub(last) < courseSyncEvery {
		return false
	}
	if c.last == nil {
		c.last = map[string]time.Time{}
	}
	c.last[key] = now
	return true
}

// forget lets the class take its members at the next launch.
func (c *courseSyncs) forget(groupID, classID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, groupID+"\x00"+classID)
}

// syncCourseMembers makes the members of a class made for a course the
// course's learners that are the school's students: a learner is the
// student whose id is their lis_person_sourcedid (the roster's id), or
// else their platform user id. Learners matched to no student yet (the
// platform has sent no event of theirs) are left out, until a later sync.
// A sync that fails is logged and leaves the class as it was: the launch
// goes on.
func (s *Server) syncCourseMembers(ctx context.Context, p analytics.LTIPlatform, launch lti.Launch, groupID, classID string) {
	if launch.MembershipsURL == "" || !s.courseSyncs.due(groupID, classID, s.now()) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, courseSyncTimeout)
	defer cancel()
	matched, learners, err := s.courseMembers(ctx, p, launch, groupID)
	if err == nil {
		_, err = s.platform.SetClassMembers(ctx, groupID, classID, matched)
	}
	if err != nil {
		s.courseSyncs.forget(groupID, classID)
		s.log.WarnContext(ctx, "LTI course members not taken", "platform", p.ID, "group", groupID, "class", classID, "error", err.Error())
		return
	}
	s.log.InfoContext(ctx, "LTI course members taken", "platform", p.ID, "group", groupID, "class", classID,
		"learners", learners, "students", len(matched))
}

// courseMembers reads the course's members with a token of the platform
// and matches its learners to the school's students.
func (s *Server) courseMembers(ctx context.Context, p analytics.LTIPlatform, launch lti.Launch, groupID string) (matched []string, learners int, err error) {
	key, _, err := s.ltiToolKeys(ctx)
	if err != nil {
		return nil, 0, err
	}
	token, err := s.ltiVerifier.AccessToken(ctx, p, key, lti.NRPSScope, s.now())
	if err != nil {
		return nil, 0, err
	}
	members, err := s.ltiVerifier.Members(ctx, launch.MembershipsURL, token)
	if err != nil {
		return nil, 0, err
	}
	students, err := s.platform.Students(ctx, groupID)
	if err != nil {
		return nil, 0, err
	}
	known := make(map[string]bool, len(students))
	for _, st := range students {
		known[st.ID] = true
	}
	for _, m := range members {
		if !m.Learner() {
			continue
		}
		learners++
		switch {
		case m.PersonSourcedID != "" && known[m.PersonSourcedID]:
			matched = append(matched, m.PersonSourcedID)
		case known[m.UserID]:
			matched = append(matched, m.UserID)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(matched))), learners, nil
}
