package storetest

import (
	"net"
	"sync"
	"testing"
)

// NewProxy starts a Proxy to target, cut when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	p := &Proxy{target: target}
	p.Start(t)
	t.Cleanup(p.Cut)
	return p
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Proxy forwards a local address to a target (a database's), and can cut every
// connection and refuse new ones, as a database outage would, or hold
// every byte without a word, as a network that drops packets would.
type Proxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	gate   sync.RWMutex // held for writing while the path drops packets
}

// forward copies src to dst, waiting at the gate before each write.
func (p *Proxy) forward(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.gate.RLock()
			p.gate.RUnlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Drop holds every byte in both directions until Restore: to both ends
// the other simply stops answering.
func (p *Proxy) Drop()    { p.gate.Lock() }
func (p *Proxy) Restore() { p.gate.Unlock() }

// Start listens again, on the address it had (a database back up).
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			p.gate.RLock() // a new connection's handshake is dropped too
			p.gate.RUnlock()
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go p.forward(server, client)
			go p.forward(client, server)
		}
	}()
}

// Cut closes every connection and stops listening (a database down).
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
