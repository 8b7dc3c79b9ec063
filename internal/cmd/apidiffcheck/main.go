package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage reports a command line run cannot act on; run has printed why.
var errUsage = errors.New("usage")

// run is the command: it returns the exit status after writing its findings
// to stdout and its errors to stderr.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apidiffcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	changelogPath := fs.String("changelog", "CHANGELOG.md", "the changelog to read")
	release := fs.Bool("release", false, "print the last release's full commit hash and exit")
	ignore := fs.String("ignore", "", "import paths whose changes do not count, separated by commas or spaces")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: apidiffcheck [-changelog FILE] [-ignore PKGS] MODULE=REPORT...")
		fmt.Fprintln(stderr, "       apidiffcheck [-changelog FILE] -release")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	data, err := os.ReadFile(*changelogPath)
	if err != nil {
		fmt.Fprintln(stderr, "apidiffcheck:", err)
		return 2
	}
	changelog := string(data)

	if *release {
		if fs.NArg() != 0 {
			fs.Usage()
			return 2
		}
		_, commit, err := lastRelease(changelog)
		if err != nil {
			fmt.Fprintf(stderr, "apidiffcheck: %s: %v\n", *changelogPath, err)
			return 2
		}
		fmt.Fprintln(stdout, commit)
		return 0
	}

	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	changes, err := readReports(fs.Args(), stderr)
	if errors.Is(err, errUsage) {
		fs.Usage()
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "apidiffcheck:", err)
		return 2
	}
	changes = without(changes, strings.FieldsFunc(*ignore, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n'
	}))
	breaking, err := unreleasedBreaking(changelog)
	if err != nil {
		fmt.Fprintf(stderr, "apidiffcheck: %s: %v\n", *changelogPath, err)
		return 2
	}
	var missing []change
	for _, c := range changes {
		if !listed(breaking, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		fmt.Fprint(stdout, failure(*changelogPath, len(changes), missing))
		return 1
	}
	fmt.Fprint(stdout, success(changes))
	return 0
}

// readReports reads each MODULE=REPORT argument's report and returns the
// incompatible changes of all of them, warning on stderr about lines it
// skipped.
func readReports(args []string, stderr io.Writer) ([]change, error) {
	var all []change
	for _, arg := range args {
		module, path, ok := strings.Cut(arg, "=")
		if !ok || module == "" || path == "" {
			fmt.Fprintf(stderr, "apidiffcheck: %q is not MODULE=REPORT\n", arg)
			return nil, errUsage
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		changes, skipped, err := parseReport(module, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, line := range skipped {
			fmt.Fprintf(stderr, "apidiffcheck: %s: skipped a line that is not a change: %s\n", path, line)
		}
		all = append(all, changes...)
	}
	return all, nil
}

// without returns the changes whose package is not one of ignored.
func without(changes []change, ignored []string) []change {
	var kept []change
	for _, c := range changes {
		if !slices.Contains(ignored, c.Package) {
			kept = append(kept, c)
		}
	}
	return kept
}

// success describes a passing check: every incompatible change is listed.
func success(changes []change) string {
	var b strings.Builder
	if len(changes) == 0 {
		b.WriteString("apidiffcheck: no incompatible API changes since the last release\n")
		return b.String()
	}
	fmt.Fprintf(&b, "apidiffcheck: %s since the last release, all listed under Unreleased → Breaking changes:\n", count(len(changes)))
	for _, c := range changes {
		fmt.Fprintf(&b, "  %s  (%s)\n", c.Key, c.Full)
	}
	return b.String()
}

// failure describes a failing check: the changes in missing, of total
// incompatible ones, are not listed, and how to list them.
func failure(changelogPath string, total int, missing []change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apidiffcheck: %s since the last release, %d not listed in %s under \"## Unreleased\" → \"### Breaking changes\":\n\n",
		count(total), len(missing), changelogPath)
	for _, c := range missing {
		fmt.Fprintf(&b, "  %s\n      list it by naming %s\n", c.Full, c.Key)
	}
	fmt.Fprintf(&b, "\nIf the change is intended, add an entry that names it, with its one-line migration, e.g.\n\n")
	fmt.Fprintf(&b, "  ### Breaking changes\n\n  - `%s`: what changed. Migration: what importers write instead.\n\n", missing[0].Key)
	fmt.Fprintf(&b, "Otherwise restore the old API. The top of %s describes the format.\n", changelogPath)
	return b.String()
}

// count returns "1 incompatible change" or "N incompatible changes".
func count(n int) string {
	if n == 1 {
		return "1 incompatible change"
	}
	return fmt.Sprintf("%d incompatible changes", n)
}
