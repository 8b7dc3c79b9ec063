package vmprovider_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"
	"sigs.k8s.io/yaml"

	"github.com/replicakit/replicakit/vmprovider"
)

func TestCloudInit_Personalized(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		want       map[string]any
		keepsBytes bool
	}{
		{name: "empty", in: "", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0"}},
		{name: "user hostname wins", in: "hostname: db1\n", want: map[string]any{"instance-id": "uid", "hostname": "db1"}, keepsBytes: true},
		{name: "both given", in: "instance-id: i-1\nlocal-hostname: h\n", want: map[string]any{"instance-id": "i-1", "local-hostname": "h"}, keepsBytes: true},
		{name: "a big integer survives", in: "serial: 12345678901234567890\n", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0", "serial": 1.2345678901234567e19}, keepsBytes: true},
		{name: "flow style", in: "{hostname: db1}", want: map[string]any{"instance-id": "uid", "hostname": "db1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := personalize(tc.in, "uid", "web-0")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q does not parse: %v", out, err)
			}
			if len(got) != len(tc.want) {
				t.Errorf("keys %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (output %q)", k, got[k], v, out)
				}
			}
			if tc.keepsBytes && !endsWith(out, tc.in) {
				t.Errorf("output %q does not keep %q as written", out, tc.in)
			}
		})
	}
	if _, err := personalize("a: [b", "uid", "web-0"); !errors.Is(err, vmprovider.ErrInvalidSpec) {
		t.Errorf("unparsable metadata: %v, want ErrInvalidSpec", err)
	}
}

// personalize is Personalized on metadata alone.
func personalize(metadata, instanceID, hostname string) (string, error) {
	c, err := vmprovider.CloudInit{MetaData: metadata}.Personalized(instanceID, hostname)
	return c.MetaData, err
}

func endsWith(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// TestCloudInit_Personalized_Properties: for any block mapping of string values and
// any identity, the result is a mapping holding every given key unchanged,
// plus instance-id and local-hostname where neither they (nor hostname)
// were given.
func TestCloudInit_Personalized_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"instance-id", "local-hostname", "hostname", "public-keys", "x"}), rapid.ID[string]).Draw(t, "keys")
		given := map[string]string{}
		in := ""
		for _, k := range keys {
			v := rapid.StringMatching(`[a-z0-9 :#"'-]{0,12}`).Draw(t, k)
			given[k] = v
			q, _ := yaml.Marshal(map[string]string{k: v})
			in += string(q)
		}
		id := rapid.StringMatching(`[a-z0-9:"' -]{1,20}`).Draw(t, "id")
		host := rapid.StringMatching(`[a-z0-9-]{1,20}`).Draw(t, "host")
		out, err := personalize(in, id, host)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := yaml.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%q does not parse: %v", out, err)
		}
		for k, v := range given {
			if got[k] != v {
				t.Fatalf("%s = %v, want %q (in %q, out %q)", k, got[k], v, in, out)
			}
		}
		if _, ok := given["instance-id"]; !ok && got["instance-id"] != id {
			t.Fatalf("instance-id = %v, want %q", got["instance-id"], id)
		}
		_, l := given["local-hostname"]
		_, h := given["hostname"]
		if !l && !h && got["local-hostname"] != host {
			t.Fatalf("local-hostname = %v, want %q", got["local-hostname"], host)
		}
		if (l || h) && got["local-hostname"] != nil && !l {
			t.Fatalf("local-hostname added although hostname was given")
		}
	})
}
