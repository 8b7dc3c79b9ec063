package naming

import (
	"errors"
	"fmt"
)

// ErrInvalidName is wrapped by every error Validate returns.
var ErrInvalidName = errors.New("naming: invalid name")

// Target is a place a replica name is used, with that place's rules.
type Target int

// The targets a name can be checked against. Portable, the zero value, is
// the strictest: a Portable name is valid as every other target too.
const (
	// Portable is a name valid everywhere a replica name goes: a DNS-1123
	// label (lowercase letters, digits and '-', starting and ending with a
	// letter or digit) of at most 63 characters. It is valid as a Kubernetes
	// object name, a label value, a vSphere VM name and a host name.
	Portable Target = iota
	// ObjectName is a Kubernetes object name: a DNS-1123 subdomain of at
	// most 253 characters, as the API server checks it: dot-separated parts
	// of lowercase letters, digits and '-', each starting and ending with a
	// letter or digit. Like the API server, it does not limit a part to 63
	// characters.
	ObjectName
	// LabelValue is a Kubernetes label value: at most 63 characters of
	// letters, digits, '-', '_' and '.', starting and ending with a letter
	// or digit (or empty).
	LabelValue
	// VSphereName is a vSphere inventory name for a VM: 1 to 80 characters,
	// without '%', '/' or '\\' (which vCenter escapes), and without control
	// characters.
	VSphereName
)

// Length limits of each target.
const (
	MaxPortable    = 63
	MaxObjectName  = 253
	MaxLabelValue  = 63
	MaxVSphereName = 80
)

// String names the target in error messages.
func (t Target) String() string {
	switch t {
	case Portable:
		return "portable name (DNS-1123 label)"
	case ObjectName:
		return "Kubernetes object name (DNS-1123 subdomain)"
	case LabelValue:
		return "Kubernetes label value"
	case VSphereName:
		return "vSphere VM name"
	}
	return fmt.Sprintf("Target(%d)", int(t))
}

// MaxLen returns the longest name the target allows, in bytes.
func (t Target) MaxLen() int {
	switch t {
	case ObjectName:
		return MaxObjectName
	case LabelValue:
		return MaxLabelValue
	case VSphereName:
		return MaxVSphereName
	}
	return MaxPortable
}

// Validate reports whether name is valid for target t. The error says what is
// wrong and where, and wraps ErrInvalidName.
func Validate(name string, t Target) error {
	if err := validate(name, t); err != "" {
		return fmt.Errorf("%q is not a valid %s: %s: %w", name, t, err, ErrInvalidName)
	}
	return nil
}

// validate returns what is wrong with name for t, or "".
func validate(name string, t Target) string {
	if len(name) > t.MaxLen() {
		return fmt.Sprintf("it is %d characters long, at most %d are allowed", len(name), t.MaxLen())
	}
	switch t {
	case Portable:
		return dnsLabel(name)
	case ObjectName:
		if name == "" {
			return "it is empty"
		}
		start := 0
		for i := 0; i <= len(name); i++ {
			if i < len(name) && name[i] != '.' {
				continue
			}
			if msg := labelChars(name[start:i]); msg != "" {
				return fmt.Sprintf("dot-separated part %q: %s", name[start:i], msg)
			}
			start = i + 1
		}
		return ""
	case LabelValue:
		if name == "" {
			return ""
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
				return fmt.Sprintf("character %q at position %d is not allowed (use letters, digits, '-', '_' and '.')", c, i)
			}
		}
		if !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
			return "it must start and end with a letter or digit"
		}
		return ""
	case VSphereName:
		if name == "" {
			return "it is empty"
		}
		for i := 0; i < len(name); i++ {
			if c := name[i]; c == '%' || c == '/' || c == '\\' || c < 0x20 || c == 0x7f {
				return fmt.Sprintf("character %q at position %d is not allowed", c, i)
			}
		}
		return ""
	}
	return fmt.Sprintf("unknown target %d", int(t))
}

// dnsLabel returns what keeps s from being a DNS-1123 label, or "".
func dnsLabel(s string) string {
	if len(s) > MaxPortable {
		return fmt.Sprintf("it is %d characters long, at most %d are allowed", len(s), MaxPortable)
	}
	return labelChars(s)
}

// labelChars returns what keeps s from having the form of a DNS-1123 label,
// whatever its length, or "". Kubernetes checks each dot-separated part of an
// object name this way: a part may be longer than 63 characters as long as
// the whole name fits in 253.
func labelChars(s string) string {
	if s == "" {
		return "it is empty"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerAlnum(c) && c != '-' {
			return fmt.Sprintf("character %q at position %d is not allowed (use lowercase letters, digits and '-')", c, i)
		}
	}
	if s[0] == '-' || s[len(s)-1] == '-' {
		return "it must start and end with a lowercase letter or digit"
	}
	return ""
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || c >= 'A' && c <= 'Z' }
