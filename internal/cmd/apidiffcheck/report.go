package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// change is one incompatible change apidiff reported.
type change struct {
	// Message is apidiff's line without its "- " prefix.
	Message string
	// Full is Message with the object named by its full import path where
	// apidiff names it relative to the module.
	Full string
	// Package is the import path of the changed package.
	Package string
	// Key is the name an entry must mention to list the change: the
	// identifier qualified by its package name, or the import path of a
	// removed package.
	Key string
	// IsPackage reports that Key is an import path (the package was removed).
	IsPackage bool
}

// parseReport reads apidiff's report on the module whose path is module and
// returns its incompatible changes, in order. Lines under a "Compatible
// changes:" header are skipped; lines before any header count as
// incompatible, as `apidiff -incompatible` prints no header. Any other line
// is returned in skipped, for the caller to show.
func parseReport(module string, r io.Reader) (changes []change, skipped []string, err error) {
	incompatible := true
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
		case line == "Incompatible changes:":
			incompatible = true
		case line == "Compatible changes:":
			incompatible = false
		case strings.HasPrefix(line, "- "):
			if !incompatible {
				continue
			}
			c, err := parseMessage(module, strings.TrimPrefix(line, "- "))
			if err != nil {
				return nil, nil, err
			}
			changes = append(changes, c)
		default:
			skipped = append(skipped, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return changes, skipped, nil
}

// packageMessage matches apidiff's message for a removed or added package.
var packageMessage = regexp.MustCompile(`^package (\S+): (removed|added)$`)

// parseMessage turns one apidiff message about the module whose path is
// module into a change. Messages name an object relative to the module:
// "Name" in the module's root package, "./dir.Name" in a package below it,
// or "example.com/other.Name" in another module (a type of that package
// whose fields show through). Methods appear as "(*T).M" or "T[P].M",
// fields as "T.F", and members of an embedded type's method set as
// "T.M, method set of *U".
func parseMessage(module, msg string) (change, error) {
	if m := packageMessage.FindStringSubmatch(msg); m != nil {
		return change{Message: msg, Full: msg, Package: m[1], Key: m[1], IsPackage: true}, nil
	}
	obj, _, ok := strings.Cut(msg, ": ")
	if !ok || obj == "" {
		return change{}, fmt.Errorf("apidiff message %q: no object before ': '", msg)
	}
	obj, _, _ = strings.Cut(obj, ", method set of ")

	// The package part ends at the first '.' after its last '/', looking
	// only before any receiver parenthesis or type parameter list.
	head := obj
	if i := strings.IndexAny(head, "(["); i >= 0 {
		head = head[:i]
	}
	var pkg, rest string
	full := msg
	switch {
	case strings.HasPrefix(obj, "./"), strings.Contains(head, "/"):
		slash := strings.LastIndex(head, "/")
		dot := strings.Index(head[slash+1:], ".")
		if dot < 0 {
			return change{}, fmt.Errorf("apidiff message %q: no name after the package path", msg)
		}
		pkg, rest = obj[:slash+1+dot], obj[slash+1+dot+1:]
		if p, ok := strings.CutPrefix(pkg, "./"); ok {
			pkg = module + "/" + p
			full = module + "/" + strings.TrimPrefix(msg, "./")
		}
	default:
		pkg, rest = module, obj
		full = module + "." + msg
	}
	name := plainName(rest)
	if name == "" {
		return change{}, fmt.Errorf("apidiff message %q: no name after the package path", msg)
	}
	return change{Message: msg, Full: full, Package: pkg, Key: packageName(pkg) + "." + name}, nil
}

// plainName strips a receiver's parentheses and star and every type
// parameter list from an object name: "(*Reconciler[O, C]).Reconcile"
// becomes "Reconciler.Reconcile".
func plainName(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth > 0, r == '(', r == ')', r == '*':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// majorVersion matches a major-version suffix of an import path, "v2" or
// above; "v1" is a package's name, as in k8s.io/api/core/v1.
var majorVersion = regexp.MustCompile(`^v([2-9]|[1-9][0-9]+)$`)

// packageName returns the name a package is referred to by: the last
// element of its import path, or the one before a major-version suffix.
func packageName(path string) string {
	elems := strings.Split(path, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && majorVersion.MatchString(name) {
		name = elems[len(elems)-2]
	}
	return name
}
