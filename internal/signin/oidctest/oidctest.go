// Package oidctest runs an OpenID Provider on loopback for the tests:
// zitadel's example provider, built on its certified OP library, with
// users and a client of the test's own and a login form a browser (or a
// test's HTTP client) fills in. It is reached through a front that passes
// everything on and can change the ID token the token endpoint sends, as
// a provider gone wrong or a man in the middle would.
package oidctest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
)

// User is a person of the provider: Username and Password fill its login
// form.
type User = storage.User

// ClientSecret is the secret of every client the tests register.
const ClientSecret = "client-secret"

// Provider is a running provider.
type Provider struct {
	// Issuer is its issuer URL, on loopback.
	Issuer  string
	storage *storage.Storage
	tamper  atomic.Pointer[func(idToken string) string]
}

// registering guards the example provider's clients, a global of its own.
var registering sync.Mutex

// Start runs a provider with these users (by id) and one web client,
// clientID, whose redirect URI is redirectURL; it stops when the test
// ends.
func Start(t testing.TB, users map[string]*User, clientID, redirectURL string) *Provider {
	t.Helper()
	front, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: "http://" + front.Addr().String()}
	b, err := json.Marshal(users)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	userStore, err := storage.StoreFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	registering.Lock()
	storage.RegisterClients(storage.WebClient(clientID, ClientSecret, redirectURL))
	registering.Unlock()
	p.storage = storage.NewStorage(userStore)
	op := httptest.NewServer(exampleop.SetupServer(p.Issuer, p.storage, slog.New(slog.DiscardHandler), false))
	t.Cleanup(op.Close)
	target, _ := url.Parse(op.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = p.modify
	srv := &httptest.Server{Listener: front, Config: &http.Server{Handler: proxy}}
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// Tamper makes the token endpoint send change(idToken) instead of the ID
// token it made; nil sends it as made.
func (p *Provider) Tamper(change func(idToken string) string) {
	if change == nil {
		p.tamper.Store(nil)
		return
	}
	p.tamper.Store(&change)
}

func (p *Provider) modify(resp *http.Response) error {
	change := p.tamper.Load()
	if change == nil || resp.Request.URL.Path != "/oauth/token" || resp.StatusCode != http.StatusOK {
		return nil
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	idToken, _ := body["id_token"].(string)
	body["id_token"] = (*change)(idToken)
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	return nil
}

// Sign signs claims as an ID token with the provider's own key.
func (p *Provider) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	key, err := p.storage.SigningKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key.Key(), KeyID: key.ID()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
