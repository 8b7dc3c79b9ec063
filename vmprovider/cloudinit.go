package vmprovider

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Personalized returns c with instance-id and local-hostname added to its
// metadata unless it gives them (a hostname given counts for
// local-hostname), so that replicas made from one template each get their
// own identity. The lines are added in front of a block mapping, leaving
// the rest as written; metadata in another style (a flow mapping, a
// document marker or directive, an indented mapping, a null document),
// which lines added in front would not leave the same mapping, is written
// out again. Blank metadata is an empty mapping; metadata that is not a
// YAML mapping is an error wrapping ErrInvalidSpec.
func (c CloudInit) Personalized(instanceID, hostname string) (CloudInit, error) {
	var m map[string]any
	// Blank metadata is an empty mapping, as Guest (and so Validate) reads it.
	if strings.TrimSpace(c.MetaData) != "" {
		if err := yaml.Unmarshal([]byte(c.MetaData), &m); err != nil {
			return c, fmt.Errorf("cloudInit.metaData is not a YAML mapping: %w: %w", err, ErrInvalidSpec)
		}
	}
	var add []string
	if _, ok := m["instance-id"]; !ok {
		add = append(add, "instance-id", instanceID)
	}
	_, local := m["local-hostname"]
	if _, host := m["hostname"]; !local && !host {
		add = append(add, "local-hostname", hostname)
	}
	want := make(map[string]any, len(m)+len(add)/2)
	maps.Copy(want, m)
	for i := 0; i < len(add); i += 2 {
		want[add[i]] = add[i+1]
	}
	trimmed := strings.TrimSpace(c.MetaData)
	if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "---") {
		var b strings.Builder
		for i := 0; i < len(add); i += 2 {
			v, _ := json.Marshal(add[i+1]) // a JSON string is a YAML string
			fmt.Fprintf(&b, "%s: %s\n", add[i], escapeYAML(v))
		}
		// Whether the lines join the mapping depends on what follows them
		// (indentation, a directive, a null document): check.
		if md := b.String() + c.MetaData; readsAs(md, want) {
			c.MetaData = md
			return c, nil
		}
	}
	if out, err := yaml.Marshal(want); err == nil && readsAs(string(out), want) {
		c.MetaData = string(out)
		return c, nil
	}
	// The YAML encoder refuses strings holding characters that YAML allows
	// only escaped (DEL, C1 controls); JSON, escaped so, is YAML too.
	out, err := json.Marshal(want)
	if err != nil || !readsAs(string(escapeYAML(out)), want) {
		return c, fmt.Errorf("cloudInit.metaData cannot be written out again with instance-id and local-hostname: %w", ErrInvalidSpec)
	}
	c.MetaData = string(escapeYAML(out))
	return c, nil
}

// readsAs says whether metadata reads as the mapping want.
func readsAs(metadata string, want map[string]any) bool {
	var got map[string]any
	return yaml.Unmarshal([]byte(metadata), &got) == nil && reflect.DeepEqual(got, want)
}

// escapeYAML rewrites JSON text so that YAML reads it as JSON does: it
// escapes, as \uXXXX, every character that YAML does not allow unescaped
// in a stream (DEL, the C1 controls, U+FEFF, U+FFFE and U+FFFF; encoding/json
// escapes the C0 controls itself). Such characters occur in JSON text only
// inside strings, where the escape means the same.
func escapeYAML(j []byte) []byte {
	var b []byte
	for i, r := range string(j) {
		printable := r >= 0x20 && r <= 0x7e || r >= 0xa0 && r <= 0xd7ff ||
			r >= 0xe000 && r <= 0xfffd && r != 0xfeff || r >= 0x10000
		if printable {
			if b != nil {
				b = utf8.AppendRune(b, r)
			}
			continue
		}
		if b == nil {
			b = append([]byte(nil), j[:i]...)
		}
		b = fmt.Appendf(b, `\u%04x`, r)
	}
	if b == nil {
		return j
	}
	return b
}
