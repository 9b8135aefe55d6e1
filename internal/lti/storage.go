package lti

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
)

// Where the browser keeps no cookie of the tool in the LMS's page (Safari,
// and any browser set to block cookies), the platform's storage (LTI
// Client Side postMessages: lti.put_data and lti.get_data, to the frame
// the login names as lti_storage_target) ties a launch to its browser
// instead: the login keeps a secret there, and the launch's session token
// goes to the page sealed by it, so that only a page the same LMS window
// holds can open it.

// StorageKey is the key a login keeps its browser's secret under in the
// platform's storage.
func StorageKey(state string) string { return "state_" + state }

// StorageOrigin is the origin of the platform's storage: its
// authorization endpoint's, as the specification says.
func StorageOrigin(authURL string) string {
	u, err := url.Parse(authURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// sealContext sets the seal's pad apart from the hash the directory keeps.
const sealContext = "groupanalytics lti seal"

// Seal seals a session's token for the browser whose secret hashes to
// browserHash (SHA-256): the token XORed with SHA-256(browserHash ||
// sealContext), in hex. A secret is random and seals one token, so the
// pad is used once; lti.js opens it with the secret it reads back.
func Seal(token string, browserHash []byte) (string, error) {
	pad := sha256.Sum256(append(slices.Clone(browserHash), sealContext...))
	if len(token) > len(pad) {
		return "", fmt.Errorf("lti: a token of %d bytes is longer than the seal", len(token))
	}
	sealed := make([]byte, len(token))
	for i := range sealed {
		sealed[i] = token[i] ^ pad[i]
	}
	return hex.EncodeToString(sealed), nil
}
