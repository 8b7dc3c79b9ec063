package main

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// listed reports whether text names c's key as the matching rule in the
// package documentation says. An identifier key counts when it is not
// preceded by a name character or '.'; an import path key when it is not
// preceded by a path character either. Neither counts when continued by a
// name character, by '.' and a name, or, for an import path, by a path
// character other than a final '.'.
func listed(text string, c change) bool {
	for from := 0; ; {
		i := strings.Index(text[from:], c.Key)
		if i < 0 {
			return false
		}
		start := from + i
		end := start + len(c.Key)
		from = start + 1
		if start > 0 {
			before, _ := utf8.DecodeLastRuneInString(text[:start])
			if nameRune(before) || before == '.' || (c.IsPackage && pathRune(before)) {
				continue
			}
		}
		if end < len(text) {
			after, size := utf8.DecodeRuneInString(text[end:])
			next, _ := utf8.DecodeRuneInString(text[end+size:])
			if nameRune(after) || (after == '.' && nameRune(next)) ||
				(c.IsPackage && after != '.' && pathRune(after)) {
				continue
			}
		}
		return true
	}
}

// nameRune reports whether r can be part of a Go identifier.
func nameRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// pathRune reports whether r, beyond name characters, can be part of an
// import path element or separate two.
func pathRune(r rune) bool {
	return r == '/' || r == '-' || r == '.' || r == '~'
}
