package netcut

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"
)

// echo serves lines back to their sender.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip dials addr, sends a line and reads it back within d.
func roundTrip(addr string, d time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func TestProxy_CutAndHeal(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	if err := roundTrip(p.Addr(), time.Second); err != nil {
		t.Fatalf("before the cut: %v", err)
	}
	// A connection open at the cut is closed.
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Close() }()
	if _, err := open.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(open).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	p.Cut(Drop)
	_ = open.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil {
		t.Error("a connection open at the cut still answers")
	}
	if err := roundTrip(p.Addr(), 300*time.Millisecond); err == nil {
		t.Error("cut (drop): a new connection is answered")
	} else if ne := net.Error(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("cut (drop): %v, want a timeout", err)
	}
	start := time.Now()
	if err := roundTrip(p.Addr(), 2*HoldFor); err == nil || time.Since(start) > HoldFor+time.Second {
		t.Errorf("cut (drop): %v after %v, want the connection closed after %v", err, time.Since(start), HoldFor)
	}
	p.Cut(Refuse)
	start = time.Now()
	if err := roundTrip(p.Addr(), 2*time.Second); err == nil || time.Since(start) > time.Second {
		t.Errorf("cut (refuse): %v after %v, want a quick failure", err, time.Since(start))
	}
	p.Heal()
	if err := roundTrip(p.Addr(), time.Second); err != nil {
		t.Fatalf("after healing: %v", err)
	}
}
