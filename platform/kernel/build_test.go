package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"leasekit.dev/platform/kernel"
)

// TestBuildMalformed: every malformed module is a clear *Error naming the
// file and line of each problem; never a panic, never a network access (a
// registry import fails at once, CUE_REGISTRY=none).
func TestBuildMalformed(t *testing.T) {
	valid := `name: "ok"
catalogs: "example.com/web@v1": {version: "v1.0.0", kinds: ["Service"]}
`
	cases := []struct {
		name  string
		files map[string]string // nil: a missing directory
		want  []string          // each "file:line" or a message fragment, in some problem
	}{
		{"missing directory", nil, []string{"no such file or directory"}},
		{"no module file", map[string]string{"platform.cue": "package platform\n" + valid}, []string{"cue.mod/module.cue is missing"}},
		{"module file syntax", map[string]string{"cue.mod/module.cue": "module: \"a.com/x@v0\"\nlanguage: {\n", "platform.cue": "package platform\n" + valid}, []string{"module.cue:2"}},
		{"module file bad path", map[string]string{"cue.mod/module.cue": "module: \"Not A Path\"\nlanguage: version: \"v0.14.0\"\n", "platform.cue": "package platform\n" + valid}, []string{"module.cue"}},
		{"module with deps", map[string]string{
			"cue.mod/module.cue": "module: \"a.com/x@v0\"\nlanguage: version: \"v0.14.0\"\ndeps: \"example.com/dep@v0\": v: \"v0.1.0\"\n",
			"platform.cue":       "package platform\n" + valid,
		}, []string{"module.cue:3", "declares dependencies"}},
		{"registry import", platformModule(`import "example.com/dep@v0:dep"` + "\n" + valid + "x: dep.x\n"), []string{"platform.cue:3"}},
		{"syntax error", platformModule("name: \"ok\"\ncatalogs: {\n"), []string{"platform.cue:4"}},
		{"not platform-shaped", platformModule(valid + "replicas: 3\n"), []string{"platform.cue:5", "not allowed"}},
		{"missing name", platformModule(`catalogs: {}` + "\n"), []string{"name", "required"}},
		{"bad name", platformModule(`name: "Not_DNS"` + "\n"), []string{"platform.cue:3"}},
		{"non-concrete", platformModule(`name: string` + "\n"), []string{"platform.cue:3", "name"}},
		{"non-concrete catalog", platformModule(`name: "ok"
catalogs: "example.com/web@v1": {version: string, kinds: ["Service"]}
`), []string{"platform.cue:4"}},
		{"catalog version of another major", platformModule(`name: "ok"
catalogs: "example.com/web@v1": {version: "v2.0.0", kinds: ["Service"]}
`), []string{"platform.cue:4", "major version"}},
		{"catalog version without v of another major", platformModule(`name: "ok"
catalogs: "example.com/web@v1": {version: "2.0.0"}
`), []string{"platform.cue:4", `"2.0.0"`, "major version"}},
		{"catalog path without major", platformModule(`name: "ok"
catalogs: "example.com/web": {version: "v1.0.0", kinds: ["Service"]}
`), []string{"platform.cue:4", "major version"}},
		{"bad kind", platformModule(`name: "ok"
catalogs: "example.com/web@v1": {version: "v1.0.0", kinds: ["service"]}
`), []string{"platform.cue:4", `"service"`}},
		{"broken definition", platformModule(valid + "#registry: {size: 1 & 2}\n"), []string{"platform.cue:5", "conflicting"}},
		{"two problems", platformModule(`name: 3
type: "Not DNS"
`), []string{"platform.cue:3", "platform.cue:4"}},
		{"two packages", map[string]string{
			"cue.mod/module.cue": "module: \"a.com/x@v0\"\nlanguage: version: \"v0.14.0\"\n",
			"a.cue":              "package a\nname: \"ok\"\n",
			"b.cue":              "package b\nname: \"ok\"\n",
		}, []string{"package"}},
	}
	for _, v := range badVersions {
		cases = append(cases, struct {
			name  string
			files map[string]string
			want  []string
		}{fmt.Sprintf("catalog version %q", v), platformModule(`name: "ok"
catalogs: "example.com/web@v1": {version: ` + strconv.Quote(v) + `}
`), []string{"platform.cue:4", `catalogs."example.com/web@v1".version: ` + strconv.Quote(v), "semantic version"}})
	}
	k := kernel.New()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "missing")
			if c.files != nil {
				dir = writeModule(t, c.files)
			}
			p, err := k.BuildPlatform(context.Background(), dir)
			var ke *kernel.Error
			if !errors.As(err, &ke) {
				t.Fatalf("BuildPlatform = (%v, %v), want a *kernel.Error", p, err)
			}
			if p != nil {
				t.Fatalf("a failed build returned a platform: %+v", p)
			}
			if ke.Op != "build" || len(ke.Problems) == 0 || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %q: want op build, problems, and the directory named", err)
			}
			msg := err.Error()
			t.Log(msg)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not mention %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestBuildGenerated(t *testing.T) {
	dir := generated(t, acme)
	p, err := kernel.New().BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "acme" || p.Type != "standard" || p.Module != "platform.leasekit.dev/acme@v0" || p.Dir != dir || p.Labels["team"] != "platform" {
		t.Fatalf("built %+v", p)
	}
	if len(p.Catalogs) != 3 || p.Catalogs[0].Path != batchPath || p.Catalogs[1].Path != dbPath || p.Catalogs[1].Enabled {
		t.Fatalf("catalogs %+v, want batch, db (disabled), web by path", p.Catalogs)
	}
	if _, ok := p.Catalog("example.com/none@v1"); ok {
		t.Fatal("Catalog found a path the platform does not carry")
	}
}

func TestBuildHonoursContext(t *testing.T) {
	dir := generated(t, acme)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := kernel.New().BuildPlatform(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("BuildPlatform with a cancelled context = %v", err)
	}
	dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer dcancel()
	if _, err := kernel.New().BuildPlatform(dctx, dir); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("BuildPlatform past its deadline = %v", err)
	}
}
