package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// section is a heading of the changelog and the lines under it, up to the
// next heading of the same or a higher level.
type section struct {
	title string
	body  []string
}

// sections splits lines at their headings of the given depth (2 for "##",
// 3 for "###") and returns those sections in order. A section runs to the
// next heading of the same or a smaller depth; lines outside any section are
// dropped. Lines in fenced code blocks are never headings.
func sections(lines []string, depth int) []section {
	var out []section
	open, fenced := false, false
	for _, line := range lines {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if title, d, ok := heading(line); ok && !fenced && d <= depth {
			open = d == depth
			if open {
				out = append(out, section{title: title})
			}
			continue
		}
		if open {
			out[len(out)-1].body = append(out[len(out)-1].body, line)
		}
	}
	return out
}

// heading reports whether line is a Markdown ATX heading ("## Title") and
// returns its title without the marks and its depth, the number of marks.
func heading(line string) (title string, depth int, ok bool) {
	trimmed := strings.TrimLeft(line, "#")
	depth = len(line) - len(trimmed)
	if depth == 0 || depth > 6 || (trimmed != "" && trimmed[0] != ' ') {
		return "", 0, false
	}
	return strings.TrimSpace(trimmed), depth, true
}

// bareTitle returns a heading's title without link brackets: "[Unreleased]"
// and "Unreleased" are the same section.
func bareTitle(title string) string {
	return strings.Trim(title, "[]")
}

// errNoUnreleased reports a changelog without its "## Unreleased" section.
var errNoUnreleased = errors.New(`no "## Unreleased" section`)

// unreleasedBreaking returns the text of the changelog's "## Unreleased" →
// "### Breaking changes" section, with HTML comments removed. A changelog
// without an Unreleased section is an error; one without a Breaking changes
// subsection lists nothing.
func unreleasedBreaking(changelog string) (string, error) {
	lines := strings.Split(changelog, "\n")
	for _, s := range sections(lines, 2) {
		if !strings.EqualFold(bareTitle(s.title), "Unreleased") {
			continue
		}
		for _, sub := range sections(s.body, 3) {
			if strings.EqualFold(sub.title, "Breaking changes") {
				return stripComments(strings.Join(sub.body, "\n")), nil
			}
		}
		return "", nil
	}
	return "", errNoUnreleased
}

// stripComments removes HTML comments, so that a template or a note kept
// in one lists nothing; an unclosed comment runs to the end.
func stripComments(s string) string {
	var b strings.Builder
	for {
		start := strings.Index(s, "<!--")
		if start < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:start])
		end := strings.Index(s[start:], "-->")
		if end < 0 {
			return b.String()
		}
		s = s[start+end+len("-->"):]
	}
}

// releaseTitle matches a release heading's title: "v0.1.0", "[v0.1.0]" or
// "v0.1.0 — 2026-12-02".
var releaseTitle = regexp.MustCompile(`^\[?v[0-9]+\.[0-9]+\.[0-9]+\S*`)

// fullHash matches a full commit hash.
var fullHash = regexp.MustCompile(`\b[0-9a-f]{40}\b`)

// lastRelease returns the version and the full commit hash of the
// changelog's last release: the first "## v..." section after Unreleased,
// whose line beginning "Commit:" holds the 40-digit hash.
func lastRelease(changelog string) (version, commit string, err error) {
	lines := strings.Split(changelog, "\n")
	seenUnreleased := false
	for _, s := range sections(lines, 2) {
		if strings.EqualFold(bareTitle(s.title), "Unreleased") {
			seenUnreleased = true
			continue
		}
		v := releaseTitle.FindString(s.title)
		if v == "" {
			continue
		}
		if !seenUnreleased {
			return "", "", fmt.Errorf("release %s comes before the \"## Unreleased\" section", v)
		}
		version = strings.Trim(v, "[]")
		for _, line := range s.body {
			if !strings.HasPrefix(line, "Commit:") {
				continue
			}
			if h := fullHash.FindString(line); h != "" {
				return version, h, nil
			}
			return "", "", fmt.Errorf("release %s: the Commit: line holds no full 40-digit commit hash: %s", version, line)
		}
		return "", "", fmt.Errorf("release %s has no line beginning \"Commit:\" with its full commit hash", version)
	}
	if !seenUnreleased {
		return "", "", errNoUnreleased
	}
	return "", "", errors.New(`no release section ("## v1.2.3") after "## Unreleased"`)
}
