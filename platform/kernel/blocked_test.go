package kernel

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/synctest"

	"leasekit.dev/platform/kernel/internal/modread"
)

// blockingSource is a module directory whose file block cannot be opened
// until release is closed: a read stuck on a slow disk.
type blockingSource struct {
	modread.Source
	block   string
	release chan struct{}
}

func (s blockingSource) Open(name string) (fs.File, error) {
	if name == s.block {
		<-s.release
	}
	return s.Source.Open(name)
}

// blockIn makes every load of a directory in dirs block on opening its
// file name until the returned function is called.
func blockIn(t *testing.T, name string, dirs ...string) (release func()) {
	ch := make(chan struct{})
	open := modread.OpenDir
	t.Cleanup(func() { modread.OpenDir = open })
	modread.OpenDir = func(dir string) (modread.Source, func(), error) {
		src, closeSrc, err := open(dir)
		for _, d := range dirs {
			if err == nil && d == dir {
				src = blockingSource{src, name, ch}
			}
		}
		return src, closeSrc, err
	}
	return func() { close(ch) }
}

// TestCancelWhileBlocked: a build or a render whose load is blocked in a
// read returns ctx.Err() as soon as its context is cancelled, without
// waiting for the read; once the read returns, the loading goroutine ends
// (the bubble of synctest.Test fails the test on a goroutine left
// blocked, and waits for every other).
func TestCancelWhileBlocked(t *testing.T) {
	platformDir := t.TempDir()
	writeFiles(t, platformDir, map[string]string{
		modread.ModuleFile: "module: \"platform.leasekit.dev/test@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"platform.cue":     "package platform\n\nname: \"acme\"\ncatalogs: \"example.com/catalogs/web@v1\": {version: \"v1.4.0\", kinds: [\"Deployment\"]}\n",
	})
	instanceDir := t.TempDir()
	writeFiles(t, instanceDir, map[string]string{
		modread.ModuleFile: "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"shop.cue":         "package shop\n\nname: \"shop\"\n",
	})
	p, err := New().BuildPlatform(context.Background(), platformDir)
	if err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func(context.Context) error{
		"build": func(ctx context.Context) error {
			_, err := New().BuildPlatform(ctx, platformDir)
			return err
		},
		"render, platform": func(ctx context.Context) error {
			_, err := New().Render(ctx, RenderInput{Platform: p, Instance: Instance{Files: map[string][]byte{
				modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
				"shop.cue":         []byte("package shop\n\nname: \"shop\"\n"),
			}}})
			return err
		},
		"render, instance": func(ctx context.Context) error {
			_, err := New().Render(ctx, RenderInput{Platform: p, Instance: Instance{Dir: instanceDir}})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, file := platformDir, "platform.cue"
			if name == "render, instance" {
				dir, file = instanceDir, "shop.cue"
			}
			for _, block := range []string{modread.ModuleFile, file} {
				synctest.Test(t, func(t *testing.T) {
					release := blockIn(t, block, filepath.Clean(dir))
					ctx, cancel := context.WithCancel(context.Background())
					returned := make(chan error, 1)
					go func() { returned <- call(ctx) }()
					synctest.Wait() // blocked in the read, and waiting on it
					select {
					case err := <-returned:
						t.Fatalf("%s: returned %v while its read was blocked", block, err)
					default:
					}
					cancel()
					synctest.Wait() // the call returns with no read released
					select {
					case err := <-returned:
						if !errors.Is(err, context.Canceled) {
							t.Fatalf("%s: cancelled while blocked = %v, want context.Canceled", block, err)
						}
					default:
						t.Fatalf("%s: still blocked after its context was cancelled", block)
					}
					release()
				})
			}
		})
	}
}
