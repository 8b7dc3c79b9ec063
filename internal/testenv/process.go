package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// startWatchdog starts a shell that outlives the test process: when the test
// process is gone (a panic, a timeout, a kill), it kills the process group of
// every child the test process has now (etcd, kube-apiserver,
// kube-controller-manager, each started in its own group). A clean Stop kills
// the watchdog instead.
func (e *Env) startWatchdog() error {
	groups, err := childGroups(os.Getpid())
	if err != nil {
		return err
	}
	script := `while kill -0 "$0" 2>/dev/null; do sleep 0.5; done; for g in "$@"; do kill -s KILL -- "-$g" 2>/dev/null; done`
	args := append([]string{"-c", script, strconv.Itoa(os.Getpid())}, groups...)
	e.watchdog = exec.Command("/bin/sh", args...)
	e.watchdog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.watchdog.Start(); err != nil {
		return fmt.Errorf("start watchdog: %w", err)
	}
	return nil
}

// childGroups returns the process groups led by children of pid, from /proc.
func childGroups(pid int) ([]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var groups []string
	for _, ent := range entries {
		child, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + ent.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// The command name is parenthesised and may hold spaces; the fields
		// after it are: state ppid pgrp.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 3 || f[1] != strconv.Itoa(pid) || f[2] != strconv.Itoa(child) {
			continue
		}
		groups = append(groups, f[2])
	}
	return groups, nil
}

// LockedBuffer collects a process's output (or a logger's) while others
// read it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail returns the last n bytes written.
func (b *LockedBuffer) Tail(n int) string {
	s := b.String()
	return s[max(len(s)-n, 0):]
}
