package platform_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// writtenPlatform is a platform module whose platform.cue holds body
// after its package clause: a module as a user writes it, not as the
// generator does.
func writtenPlatform(body string) platformmodule.Files {
	return platformmodule.Files{
		"cue.mod/module.cue": []byte("module: \"platform.leasekit.dev/acme@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"platform.cue":       []byte("package platform\n\n" + body),
	}
}

// writtenInstance is an instance module of the files given, each after
// its package clause but for the data files (not .cue).
func writtenInstance(files map[string]string) kernel.Instance {
	in := kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
	}}
	for name, body := range files {
		in.Files[name] = []byte(body)
	}
	return in
}

// checkAgainstFresh publishes each platform module in turn as the next
// generation and renders inst after each: every render returns what a
// fresh kernel render against that generation returns, byte for byte,
// error text included, memo hit or not.
func checkAgainstFresh(t *testing.T, inst kernel.Instance, gens ...platformmodule.Files) {
	t.Helper()
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	for i, files := range gens {
		if _, err := p.Publish(ctx, int64(i+1), files, kernel.SkewWarn); err != nil {
			t.Fatalf("generation %d: %v", i+1, err)
		}
		before := p.Stats().Memo
		out, rec, err := p.Render(ctx, inst)
		hit := p.Stats().Memo.Hits > before.Hits
		want, werr := kernel.New().Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: inst, Skew: rec.Skew})
		if !reflect.DeepEqual(out, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("generation %d (memo hit %v): render %+v, %v\na fresh render's %+v, %v", i+1, hit, out, err, want, werr)
		}
	}
}

const (
	exactWeb = `catalogs: "example.com/catalogs/web@v1": version: "v1.0.0"` + "\n"
	exactDB  = `catalogs: "example.com/catalogs/db@v2": version: "v2.0.%d"` + "\n"
	exactUse = `name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1"}
`
)

// Platforms whose name, type and labels decode alike but are written in
// forms that #Render reads differently: a default the instance's label
// overrides where a plain string conflicts with it, and a type absent
// (the default "standard", which #Render supplies itself) or written.
// A render of each after the other is what a fresh render gives.
func TestMemoSeesHowThePlatformWritesWhatARenderReads(t *testing.T) {
	for _, c := range []struct {
		name   string
		labels string // the instance's
		a, b   string // the two platforms
	}{
		{"a label's default", `labels: team: "b"`,
			`name: "acme"` + "\nlabels: team: *\"a\" | string\n", `name: "acme"` + "\nlabels: team: \"a\"\n"},
		{"the name's default", `labels: "platform.leasekit.dev/name": "x"`,
			`name: *"acme" | string` + "\n", `name: "acme"` + "\n"},
		{"the type absent, then written", `labels: "platform.leasekit.dev/type": "x"`,
			`name: "acme"` + "\n", `name: "acme"` + "\ntype: \"standard\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			inst := writtenInstance(map[string]string{"shop.cue": "package shop\n\n" + exactUse + c.labels + "\n"})
			checkAgainstFresh(t, inst, writtenPlatform(c.a+exactWeb), writtenPlatform(c.b+exactWeb), writtenPlatform(c.a+exactWeb))
		})
	}
}

// An instance that embeds a data file (CUE's @embed, enabled by
// @extern(embed)) into its top or into requires adds catalogs to
// requires that no field of its CUE files names: bumping one of those
// changes the render, and a render after the bump is what a fresh render
// gives.
func TestMemoSeesCatalogsAnInstanceEmbeds(t *testing.T) {
	const head = "@extern(embed)\n\npackage shop\n\n"
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{"at the top of a file", map[string]string{
			"shop.cue": head + "@embed(file=\"db.json\")\n\n" + exactUse,
			"db.json":  `{"requires": {"example.com/catalogs/db@v2": "v2.0.0"}, "components": {"db": {"kind": "Database", "catalog": "example.com/catalogs/db@v2"}}}`,
		}},
		{"in requires", map[string]string{
			"shop.cue": head + exactUse + "requires: {\n\t@embed(file=\"req.json\")\n}\n" +
				`components: db: {kind: "Database", catalog: "example.com/catalogs/db@v2"}` + "\n",
			"req.json": `{"example.com/catalogs/db@v2": "v2.0.0"}`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inst := writtenInstance(c.files)
			if paths, known := kernel.ReadsOf(inst.Files).Catalogs(); known && len(paths) < 2 {
				t.Errorf("ReadsOf: %v, known: not the catalog the embedded file requires", paths)
			}
			checkAgainstFresh(t, inst, writtenPlatform(`name: "acme"`+"\n"+exactWeb+fmt.Sprintf(exactDB, 0)),
				writtenPlatform(`name: "acme"`+"\n"+exactWeb+fmt.Sprintf(exactDB, 1)))
		})
	}
}

// A record set by hand (no Identity) is rendered without the memo, and
// the key RenderLeased returns for it keeps Key's promise all the same: a
// result that names the platform's directory has a key that equals no
// key Key computes.
func TestRenderLeasedOfARecordSetByHandBindsAKeyThatNamesItsDirectory(t *testing.T) {
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range writtenPlatform(`name: "acme"` + "\nlabels: team: \"a\"\n" + exactWeb) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	built, err := kernel.New().BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := platform.Generated{Generation: 1, Dir: dir, Platform: built}
	inst := writtenInstance(map[string]string{"shop.cue": "package shop\n\n" + exactUse + "labels: team: \"b\"\n"})
	_, key, err := p.RenderLeased(ctx, rec, inst)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("RenderLeased: %v, want an error naming %s", err, dir)
	}
	if k, kerr := p.Key(ctx, rec, inst); kerr != nil || k == key {
		t.Fatalf("Key %v (%v) equals the key %v of a result that names the directory", k, kerr, key)
	}
}

// A render that fails for a reason the memo does not keep, naming the
// platform's directory (a *kernel.ContentError: the directory no longer
// holds what the platform was built from), returns a key bound to that
// directory too: a controller that records it takes it for no render
// that Key says gives the same result.
func TestRenderLeasedBindsTheKeyOfAnyResultThatNamesTheDirectory(t *testing.T) {
	ctx := context.Background()
	p := platform.NewPublisher(t.TempDir(), platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, 1, writtenPlatform(`name: "acme"`+"\n"+exactWeb), kernel.SkewWarn); err != nil {
		t.Fatal(err)
	}
	rec, release, _ := p.Store().Lease()
	defer release()
	file := filepath.Join(rec.Dir, "platform.cue")
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("package platform\n\n"+`name: "acme"`+"\n"+exactWeb+"// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst := writtenInstance(map[string]string{"shop.cue": "package shop\n\n" + exactUse})
	_, key, err := p.RenderLeased(ctx, rec, inst)
	var ce *kernel.ContentError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), rec.Dir) {
		t.Fatalf("RenderLeased: %v, want a *kernel.ContentError naming %s", err, rec.Dir)
	}
	if k, kerr := p.Key(ctx, rec, inst); kerr != nil || k == key {
		t.Fatalf("Key %v (%v) equals the key %v of a result that names the directory", k, kerr, key)
	}
}
