package digest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"time"
)

// Mailer sends mail through one SMTP server: smtp://[user:pass@]host[:port]
// (port 25 by default; STARTTLS whenever the server offers it) or
// smtps://… (TLS from the start; port 465 by default).
type Mailer struct {
	addr, host  string
	implicitTLS bool
	user, pass  string
	// From is the sender's address.
	From string
	// TLS, if set, replaces the default TLS configuration (the system's
	// roots, the server's host name): for tests, or a private CA.
	TLS *tls.Config
	// Timeout bounds each message's conversation with the server.
	Timeout time.Duration
}

// NewMailer reads an SMTP URL. The password is kept, never printed.
func NewMailer(rawURL, from string) (*Mailer, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, errors.New("invalid --smtp-url: expected smtp://[user:password@]host[:port] or smtps://…")
	}
	m := &Mailer{host: u.Hostname(), implicitTLS: u.Scheme == "smtps", From: from, Timeout: time.Minute}
	port := u.Port()
	if port == "" {
		port = map[bool]string{false: "25", true: "465"}[m.implicitTLS]
	}
	m.addr = net.JoinHostPort(m.host, port)
	if u.User != nil {
		m.user = u.User.Username()
		m.pass, _ = u.User.Password()
	}
	return m, nil
}

// String names the server without its credentials, for logs.
func (m *Mailer) String() string { return m.addr }

// Send sends msg to one address. An error the server gave is a
// *textproto.Error: Permanent tells one not worth retrying.
func (m *Mailer) Send(ctx context.Context, to string, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, m.Timeout)
	defer cancel()
	tlsConfig := m.TLS
	if tlsConfig == nil {
		tlsConfig = &tls.Config{ServerName: m.host}
	}
	var conn net.Conn
	var err error
	if m.implicitTLS {
		conn, err = (&tls.Dialer{Config: tlsConfig}).DialContext(ctx, "tcp", m.addr)
	} else {
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", m.addr)
	}
	if err != nil {
		return fmt.Errorf("smtp %s: %w", m.addr, err)
	}
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, m.host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp %s: %w", m.addr, err)
	}
	defer c.Close()
	if err := m.converse(c, tlsConfig, to, msg); err != nil {
		return fmt.Errorf("smtp %s: %w", m.addr, err)
	}
	return nil
}

func (m *Mailer) converse(c *smtp.Client, tlsConfig *tls.Config, to string, msg []byte) error {
	hostname, err := os.Hostname()
	if err != nil {
		hostname = "localhost"
	}
	if err := c.Hello(hostname); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !m.implicitTLS {
		if err := c.StartTLS(tlsConfig); err != nil {
			return err
		}
	}
	if m.user != "" {
		// net/smtp sends PLAIN credentials only over TLS or to localhost.
		if err := c.Auth(smtp.PlainAuth("", m.user, m.pass, m.host)); err != nil {
			return err
		}
	}
	if err := c.Mail(m.From); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// Permanent reports whether err is a server's permanent refusal (a 5xx
// reply): sending the same message again would fail the same way.
func Permanent(err error) bool {
	var reply *textproto.Error
	return errors.As(err, &reply) && reply.Code >= 500
}
