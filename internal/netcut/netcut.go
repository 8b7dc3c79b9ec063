package netcut

// A Proxy sits between a client and its endpoint (a vCenter), and a test
// cuts it in the middle of work, as a network partition would.

import (
	"io"
	"net"
	"sync"
	"time"
)

// Mode is how a cut link behaves.
type Mode int

const (
	// Drop answers nothing on new connections and closes each after
	// HoldFor, as a dial through a partition that drops packets times
	// out (sooner than a real dial's 30 s, for tests).
	Drop Mode = iota
	// Refuse closes connections at once, as a host whose port is closed.
	Refuse
)

// HoldFor is how long a cut link in Drop mode holds a new connection
// before closing it.
const HoldFor = 3 * time.Second

// Proxy forwards TCP connections to a target until cut.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	mode  Mode
	conns map[net.Conn]struct{}
	held  []net.Conn // connections accepted while cut in Drop mode
	done  bool
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards every connection
// to target (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr returns the address (host:port) clients dial instead of target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut cuts the link: every open connection is closed, and new ones are
// held unanswered for HoldFor (Drop) or closed at once (Refuse) until
// Heal.
func (p *Proxy) Cut(mode Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.mode = true, mode
	for c := range p.conns {
		_ = c.Close()
	}
}

// Heal restores the link: connections held while it was cut are closed
// (their clients dial again), and new ones are forwarded.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for _, c := range p.held {
		_ = c.Close()
	}
	p.held = nil
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.done = true
	for c := range p.conns {
		_ = c.Close()
	}
	for _, c := range p.held {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		switch {
		case p.done || (p.cut && p.mode == Refuse):
			_ = c.Close()
		case p.cut:
			p.held = append(p.held, c)
			time.AfterFunc(HoldFor, func() { _ = c.Close() })
		default:
			p.conns[c] = struct{}{}
			p.wg.Go(func() { p.forward(c) })
		}
		p.mu.Unlock()
	}
}

// forward copies between c and a new connection to the target until either
// side ends or the link is cut.
func (p *Proxy) forward(c net.Conn) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
	}()
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.cut || p.done {
		p.mu.Unlock()
		_ = t.Close()
		return
	}
	p.conns[t] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, t)
		p.mu.Unlock()
		_ = t.Close()
	}()
	// Either side ending, or the cut closing either, ends both.
	copyAndClose := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
	}
	var up sync.WaitGroup
	up.Go(func() { copyAndClose(t, c) })
	copyAndClose(c, t)
	up.Wait()
}
