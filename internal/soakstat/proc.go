package soakstat

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ReadProc reads process pid's resident set size (VmRSS in
// /proc/pid/status) in bytes, and the number of file descriptors it holds
// open (the entries of /proc/pid/fd). Reading another user's process
// needs the right to: the caller's own children are always readable.
func ReadProc(pid int) (rssBytes int64, fds int, err error) {
	dir := fmt.Sprintf("/proc/%d", pid)
	f, err := os.Open(dir + "/status")
	if err != nil {
		return 0, 0, err
	}
	rssBytes, err = parseVMRSS(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s/status: %w", dir, err)
	}
	fds, err = countEntries(dir + "/fd")
	if err != nil {
		return 0, 0, err
	}
	return rssBytes, fds, nil
}

// countEntries counts the names in directory dir without statting them.
func countEntries(dir string) (int, error) {
	d, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return len(names), err
}

// errNoVMRSS means a status file has no VmRSS line: the process is a
// zombie, or a kernel thread, which has no memory of its own.
var errNoVMRSS = errors.New("no VmRSS line (a zombie or a kernel thread?)")

// parseVMRSS reads the "VmRSS:   1234 kB" line of a /proc/pid/status file
// and returns its value in bytes.
func parseVMRSS(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmRSS line %q: want a number of kB", sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb < 0 || kb > 1<<53 {
			return 0, fmt.Errorf("VmRSS line %q: want a number of kB", sc.Text())
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errNoVMRSS
}
