package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
)

const platformModuleFile = "module: \"platform.leasekit.dev/test@v0\"\nlanguage: version: \"v0.14.0\"\n"

// TestModuleDependenciesRefused: a module file that declares dependencies
// is refused however it spells them, for a platform and for an instance,
// with the position of the declaration in the module file's real path.
func TestModuleDependenciesRefused(t *testing.T) {
	for name, text := range map[string]string{
		"field":        platformModuleFile + "deps: \"example.com/x@v0\": v: \"v0.1.0\"\n",
		"embedded":     platformModuleFile + "{deps: \"example.com/x@v0\": v: \"v0.1.0\"}\n",
		"quoted label": platformModuleFile + "\"deps\": \"example.com/x@v0\": v: \"v0.1.0\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := platformModule(`name: "acme"`)
			files["cue.mod/module.cue"] = text
			dir := writeModule(t, files)
			_, err := kernel.New().BuildPlatform(context.Background(), dir)
			wantModuleProblem(t, err, "cue.mod/module.cue:", "declares dependencies (example.com/x@v0)")

			p := build(t)
			ifiles := instance(`name: "shop"`)
			ifiles["cue.mod/module.cue"] = []byte(strings.Replace(text, "platform.leasekit.dev/test", "example.com/shop", 1))
			_, err = kernel.New().Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: ifiles}})
			wantModuleProblem(t, err, "cue.mod/module.cue:", "declares dependencies")
		})
	}
}

// TestModuleFileErrorsNameTheFile: a module file the loader's rules
// refuse is reported at its real path, not at the path the loader reads
// it under.
func TestModuleFileErrorsNameTheFile(t *testing.T) {
	for name, text := range map[string]string{
		"source kind":    platformModuleFile + "source: kind: \"svn\"\n",
		"unknown field":  platformModuleFile + "x: 1\n",
		"no language":    "module: \"platform.leasekit.dev/test@v0\"\n",
		"not data":       platformModuleFile + "y: x\nx: 1\n",
		"module twice":   "module: \"\"\n" + platformModuleFile,
		"by a reference": platformModuleFile + "let d = {\"example.com/x@v0\": v: \"v0.1.0\"}\ndeps: d\n",
		"custom allowed": platformModuleFile + "custom: legacy: x: 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := platformModule(`name: "acme"`)
			files["cue.mod/module.cue"] = text
			dir := writeModule(t, files)
			_, err := kernel.New().BuildPlatform(context.Background(), dir)
			if name == "custom allowed" {
				if err != nil {
					t.Fatalf("a module file with a custom field: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), dir+": ") || !strings.Contains(err.Error(), "cue.mod/module.cue:") ||
				strings.Count(err.Error(), dir) != 1 || strings.Contains(err.Error(), " /cue.mod/") {
				t.Fatalf("error %v, want it to name cue.mod/module.cue in %s, the directory once", err, dir)
			}
		})
	}
}

// TestVendoredPackagesRefused: a module with vendored packages or local
// replacements under cue.mod is refused with an error naming the
// directory or file, for a platform and for an instance in memory.
func TestVendoredPackagesRefused(t *testing.T) {
	for _, entry := range []string{"pkg", "gen", "usr", "local-module.cue"} {
		t.Run(entry, func(t *testing.T) {
			name := "cue.mod/" + entry
			content := "module: \"platform.leasekit.dev/test@v0\"\n"
			if entry != "local-module.cue" {
				name += "/example.com/lib/lib.cue"
				content = "package lib\n\nx: 1\n"
			}
			files := platformModule("import \"example.com/lib\"\n\nname: \"acme\"\nlabels: x: \"\\(lib.x)\"\n")
			files[name] = content
			dir := writeModule(t, files)
			_, err := kernel.New().BuildPlatform(context.Background(), dir)
			want := filepath.Join(dir, "cue.mod", entry)
			var fe *kernel.FileError
			if !errors.As(err, &fe) || fe.Dir != dir || fe.File != "cue.mod/"+entry || filepath.Join(fe.Dir, fe.File) != want || !strings.Contains(err.Error(), "self-contained") {
				t.Fatalf("build with %s = %v, want a *FileError naming %s", name, err, want)
			}

			ifiles := instance(`name: "shop"`)
			ifiles[name] = []byte(content)
			_, err = kernel.New().Render(context.Background(), kernel.RenderInput{Platform: build(t), Instance: kernel.Instance{Files: ifiles}})
			if !errors.As(err, &fe) || fe.Dir != "instance" || fe.File != "cue.mod/"+entry {
				t.Fatalf("render with %s = %v, want a *FileError naming instance/cue.mod/%s", name, err, entry)
			}
		})
	}
}

// wantModuleProblem fails t unless err is an *Error with a problem at a
// position in file whose message holds msg.
func wantModuleProblem(t *testing.T, err error, file, msg string) {
	t.Helper()
	var ke *kernel.Error
	if !errors.As(err, &ke) {
		t.Fatalf("error %v, want an *Error", err)
	}
	for _, p := range ke.Problems {
		if strings.Contains(p.Message, msg) && len(p.Positions) > 0 && strings.HasPrefix(p.Positions[0], file) {
			return
		}
	}
	t.Fatalf("%v: no problem at %s saying %q", err, file, msg)
}
