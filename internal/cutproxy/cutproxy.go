// Package cutproxy is a test helper: a TCP proxy on 127.0.0.1 in front of a dependency
// (Postgres, Redis) that a test can cut, as a restart of the dependency or a network
// partition would, and restore.
package cutproxy

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP to its target. While down it closes every open connection and
// refuses new ones. It counts the connections open through it, and every connection
// attempt, so a test can tell whether its client tried the dependency at all.
type Proxy struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	down     bool
	conns    map[net.Conn]bool // client side → true; server side → false
	accepted int               // connections accepted, up or down
}

// Start listens on 127.0.0.1 and forwards to target (host:port) until t ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { _ = ln.Close(); p.SetDown(true) })
	go p.serve()
	return p
}

// Addr is the proxy's host:port, to put in the dependency's DSN or URL instead of target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.accepted++
		p.mu.Unlock()
		if down {
			_ = client.Close()
			continue
		}
		server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client], p.conns[server] = true, false
		p.mu.Unlock()
		forget := func() {
			_ = client.Close()
			_ = server.Close()
			p.mu.Lock()
			delete(p.conns, client)
			delete(p.conns, server)
			p.mu.Unlock()
		}
		go func() { _, _ = io.Copy(server, client); forget() }()
		go func() { _, _ = io.Copy(client, server); forget() }()
	}
}

// SetDown cuts (true) or restores (false) the dependency.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	var cut []net.Conn
	if down {
		for c := range p.conns {
			cut = append(cut, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cut {
		_ = c.Close()
	}
}

// Open is the number of connections open through the proxy.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, isClient := range p.conns {
		if isClient {
			n++
		}
	}
	return n
}

// Accepted is the number of connections clients opened to the proxy, including those it
// closed at once while down.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}
