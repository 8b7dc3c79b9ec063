package soakstat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestParseVMRSS: the VmRSS line is found among the others and read in
// bytes.
func TestParseVMRSS(t *testing.T) {
	line := rapid.StringMatching(`[A-Za-z_]{1,12}:\t[ 0-9a-zA-Z]{0,20}`)
	rapid.Check(t, func(t *rapid.T) {
		kb := rapid.Int64Range(0, 1<<40).Draw(t, "kB")
		before := rapid.SliceOfN(line, 0, 10).Draw(t, "before")
		after := rapid.SliceOfN(line, 0, 10).Draw(t, "after")
		for _, l := range append(before, after...) {
			if strings.HasPrefix(l, "VmRSS:") {
				t.Skip("a drawn line is a VmRSS line")
			}
		}
		spaces := strings.Repeat(" ", rapid.IntRange(0, 8).Draw(t, "spaces"))
		status := strings.Join(before, "\n") + "\nVmRSS:\t" + spaces + fmt.Sprint(kb) + " kB\n" + strings.Join(after, "\n")
		got, err := parseVMRSS(strings.NewReader(status))
		if err != nil || got != kb*1024 {
			t.Fatalf("parseVMRSS(%q) = %d, %v; want %d", status, got, err, kb*1024)
		}
	})
}

func TestParseVMRSS_Malformed(t *testing.T) {
	for _, status := range []string{
		"",
		"Name:\tkthreadd\nVmPeak:\t0 kB\n",
		"VmRSS:\t12 MB\n",
		"VmRSS:\tlots kB\n",
		"VmRSS:\t-3 kB\n",
		"VmRSS:\n",
	} {
		if got, err := parseVMRSS(strings.NewReader(status)); err == nil {
			t.Errorf("parseVMRSS(%q) = %d, want an error", status, got)
		}
	}
	if _, err := parseVMRSS(strings.NewReader("Name:\tx\n")); !errors.Is(err, errNoVMRSS) {
		t.Errorf("no VmRSS line: %v, want %v", err, errNoVMRSS)
	}
}

// TestReadProc reads this test's own process: some memory, and one more
// file descriptor per file it opens.
func TestReadProc(t *testing.T) {
	dir := t.TempDir()
	open := func(name string) {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() }) // a temporary file, only counted
	}
	open("warm-up") // the runtime's poller opens its own descriptors once
	rss, fds, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 || fds < 3 {
		t.Errorf("ReadProc(self) = %d bytes, %d fds; want at least 1 MiB and stdin, stdout, stderr", rss, fds)
	}
	for i := range 5 {
		open(fmt.Sprint(i))
	}
	if _, more, err := ReadProc(os.Getpid()); err != nil || more != fds+5 {
		t.Errorf("after opening 5 files: %d fds, %v; want %d", more, err, fds+5)
	}
	if _, _, err := ReadProc(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadProc of no process: %v, want %v", err, os.ErrNotExist)
	}
}
