// Package mailtest runs a real SMTP server on loopback for tests
// (emersion/go-smtp), keeps the messages it accepts, and reads them back
// as their parts.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Server is an SMTP server on 127.0.0.1, stopped when the test ends.
type Server struct {
	Addr string
	// ClientTLS trusts the server's certificate, when it offers STARTTLS.
	ClientTLS *tls.Config
	user      string
	pass      string

	mu       sync.Mutex
	messages []Message
	refusals []int // the codes the next DATA commands are refused with
	changed  chan struct{}
}

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Data []byte
	TLS  bool // it came over STARTTLS
}

// Options are a server's: STARTTLS offered, and PLAIN credentials
// required.
type Options struct {
	TLS        bool
	User, Pass string
}

// Start starts a server with opts.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{user: opts.User, pass: opts.Pass, changed: make(chan struct{})}
	srv := smtp.NewServer(s)
	srv.Domain = "mail.test"
	srv.AllowInsecureAuth = true // PLAIN over loopback without TLS
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	if opts.TLS {
		cert, pool := selfSigned(t)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.ClientTLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// URL is the server's smtp:// URL, with its credentials.
func (s *Server) URL() string {
	if s.user != "" {
		return "smtp://" + s.user + ":" + s.pass + "@" + s.Addr
	}
	return "smtp://" + s.Addr
}

// Refuse refuses the next messages, one per code (4xx: for now; 5xx: for
// good), at the end of their DATA.
func (s *Server) Refuse(codes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals = append(s.refusals, codes...)
}

// Messages are the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// WaitFor waits until the server has accepted n messages, for up to
// timeout, and returns them all.
func (s *Server) WaitFor(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		got, changed := len(s.messages), s.changed
		s.mu.Unlock()
		if got >= n {
			return s.Messages()
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the SMTP server got %d messages in %v, want %d", got, timeout, n)
		}
	}
}

// NewSession is go-smtp's Backend.
func (s *Server) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{server: s, conn: c}, nil
}

type session struct {
	server *Server
	conn   *smtp.Conn
	authed bool
	msg    Message
}

func (ss *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (ss *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != ss.server.user || pass != ss.server.pass {
			return &smtp.SMTPError{Code: 535, Message: "bad credentials"}
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.server.user != "" && !ss.authed {
		return &smtp.SMTPError{Code: 530, Message: "authentication required"}
	}
	_, tlsOn := ss.conn.TLSConnectionState()
	ss.msg = Message{From: from, TLS: tlsOn}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := ss.server
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.refusals) > 0 {
		code := s.refusals[0]
		s.refusals = s.refusals[1:]
		return &smtp.SMTPError{Code: code, Message: "refused by the test"}
	}
	ss.msg.Data = data
	s.messages = append(s.messages, ss.msg)
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

func (ss *session) Reset()        {}
func (ss *session) Logout() error { return nil }

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mailtest"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// Parsed is a message read back: its header, and its parts by media type
// (text/plain, text/html), decoded.
type Parsed struct {
	Header mail.Header
	Parts  map[string]string
}

// Parse reads a multipart/alternative message.
func Parse(data []byte) (Parsed, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return Parsed{}, err
	}
	p := Parsed{Header: msg.Header, Parts: map[string]string{}}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/alternative" {
		return p, errors.New("not multipart/alternative: " + msg.Header.Get("Content-Type"))
	}
	parts := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := parts.NextRawPart()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		var body io.Reader = part
		if strings.EqualFold(part.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			body = quotedprintable.NewReader(part)
		}
		b, err := io.ReadAll(body)
		if err != nil {
			return p, err
		}
		partType, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		p.Parts[partType] = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
}
