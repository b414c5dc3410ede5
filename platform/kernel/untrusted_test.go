//go:build unix

package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"leasekit.dev/platform/kernel"
)

// mkfifo makes a named pipe at name, which no one will ever write: an
// open or a read of it for reading would block for good.
func mkfifo(t *testing.T, name string) {
	t.Helper()
	if err := syscall.Mkfifo(name, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
}

// wantFileError fails t unless err is a *FileError naming file, whose rule
// holds rule.
func wantFileError(t *testing.T, err error, file, rule string) {
	t.Helper()
	var fe *kernel.FileError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v, want a *FileError for %s", err, file)
	}
	if filepath.Join(fe.Dir, fe.File) != file || fe.Dir == "" || !strings.Contains(fe.Rule, rule) ||
		!strings.Contains(err.Error(), fe.Dir+": "+fe.File) || strings.Count(err.Error(), fe.Dir) != 1 {
		t.Fatalf("%+v (%v), want %s refused, relative to its module: %s", fe, err, file, rule)
	}
}

// TestNamedPipeRefused: a named pipe among a module's files fails the
// build or render with an error naming it, and blocks nothing: not the
// build, not a render against a platform built before the pipe was made,
// not a render of an instance directory.
func TestNamedPipeRefused(t *testing.T) {
	k := kernel.New()
	ctx := context.Background()

	dir := generated(t, acme)
	p, err := k.BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "zz.cue")
	mkfifo(t, fifo)
	_, err = k.BuildPlatform(ctx, dir)
	wantFileError(t, err, fifo, "named pipe")
	_, err = k.Render(ctx, shop(p, "v1.0.0", 1))
	wantFileError(t, err, fifo, "named pipe")

	p = build(t)
	idir := writeModule(t, map[string]string{"cue.mod/module.cue": instanceModule, "shop.cue": "package shop\n\nname: \"shop\"\n"})
	fifo = filepath.Join(idir, "zz.cue")
	mkfifo(t, fifo)
	_, err = k.Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: idir}})
	wantFileError(t, err, fifo, "named pipe")

	// A named pipe in place of the module file, or of its directory.
	dir = generated(t, acme)
	remove(t, filepath.Join(dir, "cue.mod", "module.cue"))
	mkfifo(t, filepath.Join(dir, "cue.mod", "module.cue"))
	_, err = k.BuildPlatform(ctx, dir)
	wantFileError(t, err, filepath.Join(dir, "cue.mod", "module.cue"), "named pipe")
	fifo = filepath.Join(t.TempDir(), "platform")
	mkfifo(t, fifo)
	if _, err := k.BuildPlatform(ctx, fifo); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("build of a named pipe = %v, want not a directory", err)
	}
}

// TestSymlinks: a symbolic link whose target stays in the module is
// followed; one that leads out of it, or to nothing, fails the build with
// an error naming it, and nothing outside is read.
func TestSymlinks(t *testing.T) {
	k := kernel.New()
	ctx := context.Background()

	// In the module: link.cue adds a label from a file the loader would
	// not read by itself.
	dir := generated(t, acme)
	kernel.WriteFiles(t, dir, map[string]string{"shared/labels.txt": "package platform\n\nlabels: linked: \"yes\"\n"})
	symlink(t, filepath.Join("shared", "labels.txt"), filepath.Join(dir, "link.cue"))
	p, err := k.BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatalf("build with a link inside the module: %v", err)
	}
	if p.Labels["linked"] != "yes" {
		t.Fatalf("labels %v: the link inside the module was not followed", p.Labels)
	}
	if _, err := k.Render(ctx, shop(p, "v1.0.0", 1)); err != nil {
		t.Fatalf("render with a link inside the module: %v", err)
	}
	// The link's target is part of the platform's content.
	rewrite(t, dir, "shared/labels.txt", `"yes"`, `"no"`)
	if _, err := k.Render(ctx, shop(p, "v1.0.0", 1)); !errors.As(err, new(*kernel.ContentError)) {
		t.Fatalf("render after the link's target changed = %v, want a *ContentError", err)
	}

	// Out of the module, relative and absolute: the target is a valid
	// platform file, which must not be read.
	outside := writeModule(t, map[string]string{"labels.cue": "package platform\n\nlabels: outside: \"read\"\n"})
	for name, target := range map[string]string{
		"relative": filepath.Join("..", filepath.Base(outside), "labels.cue"),
		"absolute": filepath.Join(outside, "labels.cue"),
		"dotdot":   filepath.Join("shared", "..", "..", filepath.Base(outside), "labels.cue"),
	} {
		t.Run(name, func(t *testing.T) {
			dir := generated(t, acme)
			if name != "absolute" {
				// Side by side, so that the relative target exists.
				dir = filepath.Join(filepath.Dir(outside), "platform-"+name)
				kernel.WriteFiles(t, dir, snapshot(t, generated(t, acme)))
				t.Cleanup(func() { os.RemoveAll(dir) })
			}
			if err := os.MkdirAll(filepath.Join(dir, "shared"), 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(dir, "link.cue")
			symlink(t, target, link)
			if _, err := os.Stat(link); err != nil {
				t.Fatalf("the link does not reach its target: %v", err)
			}
			_, err := k.BuildPlatform(ctx, dir)
			wantFileError(t, err, link, "leads out of the module")
		})
	}

	dir = generated(t, acme)
	link := filepath.Join(dir, "dangling.cue")
	symlink(t, "nothing.cue", link)
	_, err = k.BuildPlatform(ctx, dir)
	wantFileError(t, err, link, "to nothing")

	dir = generated(t, acme)
	link = filepath.Join(dir, "loop.cue")
	symlink(t, "loop.cue", link)
	_, err = k.BuildPlatform(ctx, dir)
	wantFileError(t, err, link, "does not resolve in it")

	// The directory given may itself be a link: it is the caller's path.
	linked := filepath.Join(t.TempDir(), "platform")
	symlink(t, generated(t, acme), linked)
	if _, err := k.BuildPlatform(ctx, linked); err != nil {
		t.Fatalf("build through a linked directory: %v", err)
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}
