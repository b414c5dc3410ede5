package rules

import (
	"strings"
	"testing"
)

func TestRules(t *testing.T) {
	cases := []struct {
		rule  func(string) string
		name  string
		good  []string
		wrong []string
	}{
		{DNSLabel, "DNSLabel", []string{"a", "acme", "a-b", "0", "a1", strings.Repeat("a", 63)},
			[]string{"", "A", "-a", "a-", "a_b", "a.b", "a b", "ä", strings.Repeat("a", 64), "a\n"}},
		{Kind, "Kind", []string{"Deployment", "S", "Kind2"}, []string{"", "deployment", "2D", "De-ploy", "Dé"}},
		{LabelKey, "LabelKey", []string{"team", "app.kubernetes.io/name", "a", "A_b.c-d", "x.io/" + strings.Repeat("n", 63)},
			[]string{"", "/a", "a/", "-a", "a-", "x.io/a/b", "X.io/a", strings.Repeat("n", 64), "a b"}},
		{LabelValue, "LabelValue", []string{"", "v", "1.0", "a_b-c.d", strings.Repeat("v", 63)},
			[]string{"-v", "v-", "a b", "a\"b", strings.Repeat("v", 64), "\\("}},
	}
	for _, c := range cases {
		for _, s := range c.good {
			if r := c.rule(s); r != "" {
				t.Errorf("%s(%q) = %q, want valid", c.name, s, r)
			}
		}
		for _, s := range c.wrong {
			if r := c.rule(s); r == "" {
				t.Errorf("%s(%q) is valid, want a rule", c.name, s)
			}
		}
	}
}

func TestCatalog(t *testing.T) {
	good := [][2]string{{"example.com/web@v1", "v1.0.0"}, {"example.com/web@v0", "v0.3.0-rc.1"}, {"a.io/b/c@v12", "v12.1.2"}}
	for _, g := range good {
		if f, r := Catalog(g[0], g[1]); r != "" {
			t.Errorf("Catalog(%q, %q) = %s %s, want valid", g[0], g[1], f, r)
		}
	}
	wrong := []struct{ path, version, field string }{
		{"example.com/web", "v1.0.0", "path"},
		{"example.com/web@v1.2", "v1.2.0", "path"},
		{"local", "v0.0.0", "path"},
		{"Example.com/web@v1", "v1.0.0", "path"},
		{"example.com/w\"b@v1", "v1.0.0", "path"},
		{"example.com/web@v1", "1.0.0", "version"},
		{"example.com/web@v1", "v1.0", "version"},
		{"example.com/web@v1", "v1.0.0+build", "version"},
		{"example.com/web@v1", "v2.0.0", "version"},
	}
	for _, w := range wrong {
		if f, r := Catalog(w.path, w.version); f != w.field || r == "" {
			t.Errorf("Catalog(%q, %q) = %q %q, want a %s rule", w.path, w.version, f, r, w.field)
		}
	}
	if Newer("v1.2.0", "v1.10.0") || !Newer("v1.10.0", "v1.2.0") || Newer("v1.0.0", "v1.0.0") || !Newer("v1.0.0", "v1.0.0-rc.1") {
		t.Error("Newer compares as semantic versions")
	}
}
