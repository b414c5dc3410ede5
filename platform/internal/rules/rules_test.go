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
	good := [][2]string{{"example.com/web@v1", "v1.0.0"}, {"example.com/web@v0", "v0.3.0-rc.1"}, {"a.io/b/c@v12", "v12.1.2"},
		{"example.com/web@v1", "1.4.2"}, {"example.com/web@v0", "0.3.0-rc.1"}, {"example.com/web@v1", "v1.0.0+build"}, {"example.com/web@v1", "1.0.0+build.5"}}
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
		{"example.com/web@v1", "v1.0", "version"},
		{"example.com/web@v1", "01.0.0", "version"},
		{"example.com/web@v1", "v2.0.0", "version"},
		{"example.com/web@v1", "2.0.0", "version"},
		{"example.com/web@v0", "1.0.0", "version"},
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

func TestVersion(t *testing.T) {
	good := []string{"1.2.3", "v1.2.3", "0.0.0", "v0.3.0-rc.1", "1.0.0-alpha", "1.0.0-0.3.7", "1.0.0-x.7.z.92", "1.0.0-x-y-z.--",
		"1.0.0+20130313144700", "v1.0.0-beta+exp.sha.5114f85", "1.0.0+21AF26D3----117B344092BD", "10.20.30", "v99999999999999999999.0.0"}
	wrong := []string{"", "v", "1", "v1", "1.2", "v1.2", "1.2.3.4", "v1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "v01.2.3",
		"V1.2.3", "vv1.2.3", " 1.2.3", "1.2.3 ", "1.2.3\n", "\t1.2.3", "1.2.3-", "1.2.3+", "1.2.3-01", "1.2.3-a..b",
		"1.2.3+a..b", "1.2.3-ä", "1.2.3+a+b", "-1.2.3", "1.2.-3", "1.2.3_4", "v 1.2.3"}
	for _, s := range good {
		if r := Version(s); r != "" {
			t.Errorf("Version(%q) = %q, want valid", s, r)
		}
	}
	for _, s := range wrong {
		if r := Version(s); r == "" {
			t.Errorf("Version(%q) is valid, want a rule", s)
		}
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.4.2", "v1.4.2", 0},
		{"v1.4.2", "1.4.2", 0},
		{"1.4.3", "v1.4.2", 1},
		{"v1.4.2", "1.4.3", -1},
		{"1.2.0", "1.10.0", -1},
		{"1.0.0", "v1.0.0-rc.1", 1},
		{"1.0.0-rc.2", "v1.0.0-rc.10", -1},
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.beta", "1.0.0-beta", -1},
		{"1.0.0+build.1", "v1.0.0+build.2", 0},
		{"1.0.0+build", "1.0.0", 0},
		{"1.0.1+a", "1.0.0+b", 1},
	}
	for _, c := range cases {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Newer(c.a, c.b); got != (c.want > 0) {
			t.Errorf("Newer(%q, %q) = %v, want %v", c.a, c.b, got, c.want > 0)
		}
	}
}
