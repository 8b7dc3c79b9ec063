package naming

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// ErrExhausted means a generator could not find enough names that are not
// taken.
var ErrExhausted = errors.New("naming: no free name found")

// Namer makes names for new replicas. Random and Indexed are Namers.
type Namer interface {
	// Names returns n distinct new names, none of them in existing.
	Names(n int, existing []string) ([]string, error)
}

var (
	_ Namer = Random{}
	_ Namer = Indexed{}
)

// ErrNoSource means a Random generator was used without a Source.
var ErrNoSource = errors.New("naming: no random source")

// SuffixLen is the length of a Random name's suffix.
const SuffixLen = 5

// suffixAlphabet has no vowels (no words) and no characters easily confused
// with one another (0/o, 1/l, 3/e).
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// maxAttempts bounds how often Random retries a suffix that is taken.
const maxAttempts = 64

// Random makes names the way Kubernetes' generateName does: the base, a '-'
// and SuffixLen random characters, such as test-rs-zmdmm. The randomness
// comes from Source, so tests are reproducible. Names are made of lowercase
// letters, digits and '-', start and end with a letter or digit, and are no
// longer than Target.MaxLen(): with the default target, Portable, they are
// valid for every target; with a longer one they are valid for every target
// whose limit they fit (a 100-character name made for ObjectName is a valid
// object name and vSphere name, but not a label value).
//
// The base is made fit first: lowercased, every character that a DNS-1123
// label does not allow replaced by '-', leading and trailing '-' trimmed, and
// truncated so the whole name fits.
type Random struct {
	// Base is the name's prefix, usually the owner's name.
	Base string
	// Source supplies randomness; rand.NewPCG or rand.NewChaCha8 from
	// math/rand/v2 will do. It must not be nil, and must not be shared with
	// other goroutines while Names runs.
	Source rand.Source
	// Target sets the length limit. The zero value is Portable (63).
	Target Target
}

// Names returns n distinct new names, none of them in existing. It returns
// an error wrapping ErrNoSource when g.Source is nil, and one wrapping
// ErrExhausted when free names are too rare to find.
func (g Random) Names(n int, existing []string) ([]string, error) {
	if g.Source == nil {
		return nil, fmt.Errorf("names for %q: %w", g.Base, ErrNoSource)
	}
	prefix := fit(g.Base, g.Target.MaxLen()-SuffixLen-1)
	taken := setOf(existing)
	rnd := rand.New(g.Source)
	out := make([]string, 0, n)
	var buf [SuffixLen]byte
	for len(out) < n {
		found := false
		for range maxAttempts {
			for i := range buf {
				buf[i] = suffixAlphabet[rnd.IntN(len(suffixAlphabet))]
			}
			name := join(prefix, string(buf[:]))
			if _, ok := taken[name]; !ok {
				taken[name] = struct{}{}
				out = append(out, name)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("names for %q: %d attempts hit taken names: %w", g.Base, maxAttempts, ErrExhausted)
		}
	}
	return out, nil
}

// Indexed makes ordinal names: the base, a '-' and a decimal index, such as
// web-0, web-1. Names have the same form as Random's, so the same targets
// accept them; the base is made fit as for Random.
type Indexed struct {
	// Base is the name's prefix, usually the owner's name.
	Base string
	// Target sets the length limit. The zero value is Portable (63).
	Target Target
}

// Name returns the name with ordinal i, which must not be negative.
func (g Indexed) Name(i int) string {
	digits := strconv.Itoa(i)
	return join(fit(g.Base, g.Target.MaxLen()-len(digits)-1), digits)
}

// Ordinal returns the ordinal of a name that g.Name made, and false for any
// other name.
func (g Indexed) Ordinal(name string) (int, bool) {
	i := strings.LastIndexByte(name, '-')
	digits := name[i+1:]
	if digits == "" || len(digits) > 1 && digits[0] == '0' || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || g.Name(n) != name {
		return 0, false
	}
	return n, true
}

// Names returns the n lowest-numbered names not in existing, in ascending
// order: after web-0 and web-2 come web-1 and web-3. Reusing freed ordinals
// keeps a set's names dense, as a StatefulSet's are.
func (g Indexed) Names(n int, existing []string) ([]string, error) {
	taken := setOf(existing)
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		if name := g.Name(i); !contains(taken, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// LabelValueFor returns s if it is a valid label value, and otherwise a valid
// label value derived from it: the characters a label value does not allow
// replaced by '-', cut to fit, and a hash of the whole of s appended, so that
// different inputs stay different. Use it to put a name that may be long (a
// 253-character object name) into a label.
func LabelValueFor(s string) string {
	if validate(s, LabelValue) == "" {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	hash := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:hashLen]
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < MaxLabelValue-hashLen-1; i++ {
		if c := s[i]; isAlnum(c) || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			b.WriteByte('-')
		}
	}
	return join(strings.Trim(b.String(), "-_."), hash)
}

// hashLen is the length of the hash LabelValueFor appends: 50 bits.
const hashLen = 10

// fit makes base usable as the prefix of a DNS-1123 label of at most room
// characters (room may be zero or negative, giving "").
func fit(base string, room int) string {
	b := make([]byte, 0, len(base))
	for i := 0; i < len(base); i++ {
		c := base[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case !isLowerAlnum(c):
			c = '-'
		}
		b = append(b, c)
	}
	s := strings.Trim(string(b), "-")
	if len(s) > room {
		s = strings.TrimRight(s[:max(room, 0)], "-")
	}
	return s
}

// join puts prefix and suffix together with a '-', or returns suffix alone
// when there is no prefix.
func join(prefix, suffix string) string {
	if prefix == "" {
		return suffix
	}
	return prefix + "-" + suffix
}

func setOf(names []string) map[string]struct{} {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

func contains(m map[string]struct{}, s string) bool {
	_, ok := m[s]
	return ok
}
