package vmprovider

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Personalized returns c with instance-id and local-hostname added to its
// metadata unless it gives them (a hostname given counts for
// local-hostname), so that replicas made from one template each get their
// own identity. The lines are added in front of a block mapping, leaving
// the rest as written; metadata in another style (a flow mapping, a
// document marker) is written out again. Metadata that is not a YAML
// mapping is an error wrapping ErrInvalidSpec.
func (c CloudInit) Personalized(instanceID, hostname string) (CloudInit, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(c.MetaData), &m); err != nil {
		return c, fmt.Errorf("cloudInit.metaData is not a YAML mapping: %w: %w", err, ErrInvalidSpec)
	}
	var add []string
	if _, ok := m["instance-id"]; !ok {
		add = append(add, "instance-id", instanceID)
	}
	_, local := m["local-hostname"]
	if _, host := m["hostname"]; !local && !host {
		add = append(add, "local-hostname", hostname)
	}
	trimmed := strings.TrimSpace(c.MetaData)
	if trimmed == "" || !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "---") {
		var b strings.Builder
		for i := 0; i < len(add); i += 2 {
			v, _ := json.Marshal(add[i+1]) // a JSON string is a YAML string
			fmt.Fprintf(&b, "%s: %s\n", add[i], v)
		}
		c.MetaData = b.String() + c.MetaData
		return c, nil
	}
	if m == nil {
		m = map[string]any{}
	}
	for i := 0; i < len(add); i += 2 {
		m[add[i]] = add[i+1]
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return c, fmt.Errorf("cloudInit.metaData: %w", err)
	}
	c.MetaData = string(out)
	return c, nil
}
