//go:build unix

package platform_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"leasekit.dev/platform"
)

const (
	envCrashChild = "PLATFORM_TEST_CRASH_CHILD" // Root; the child publishes until killed
	crashReady    = "ready\n"                   // the child's word after its first publish
)

// TestCrashChild is the child of TestCrash: a booted Publisher publishing
// new generations and changing the current one until it is killed, with
// a lease taken now and then so that superseded generations linger.
func TestCrashChild(t *testing.T) {
	root := os.Getenv(envCrashChild)
	if root == "" {
		t.Skip("run by TestCrash")
	}
	p := platform.NewPublisher(root, platform.PublisherOptions{})
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	go p.Run(ctx)
	var release func()
	for i := 0; ; i++ {
		gen := int64(1 + i/2)
		if _, err := p.Publish(ctx, gen, moduleFiles(t, i%4), 0); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			os.Stdout.WriteString(crashReady)
		}
		if i%3 == 0 {
			if release != nil {
				release()
			}
			_, release, _ = p.Store().Lease()
			if i%2 == 0 {
				// The rewrite below must not wait for this lease forever.
				release()
				release = nil
			}
		}
	}
}

// TestCrash kills a publishing child with SIGKILL at random instants:
// after each kill every generation directory in Root is complete, and a
// booted Publisher finds Root empty and publishes again.
func TestCrash(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 8
	}
	root := filepath.Join(t.TempDir(), "platform")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	variants := make([]map[string][]byte, 4)
	for v := range variants {
		variants[v] = moduleFiles(t, v)
	}
	var dirsChecked int
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCrashChild+"="+root)
		var out bytes.Buffer
		cmd.Stderr = &out
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ready := make([]byte, len(crashReady))
		if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != crashReady {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: child not ready (%q, %v):\n%s", i, ready, err, out.String())
		}
		time.Sleep(time.Duration(rng.IntN(50_000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended with %v before the kill:\n%s", i, err, out.String())
		}

		p := platform.NewPublisher(root, platform.PublisherOptions{})
		for _, dir := range genDirs(t, root) {
			complete := false
			for _, v := range variants {
				complete = complete || sameFiles(readTree(t, dir), v)
			}
			if !complete {
				t.Fatalf("kill %d: %s is partial: %d files", i, dir, len(readTree(t, dir)))
			}
			dirsChecked++
		}
		// The specified Layout, after the crash: Prune leaves exactly the
		// kept generations when it returns, whatever the child left (the
		// Publisher's gen-<n>-<digest> directories are not the specified
		// Layout's, and go too).
		gens, err := p.Layout().Generations()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, g := range gens {
			want = append(want, filepath.Base(p.Layout().Dir(g)))
		}
		slices.Sort(want)
		if err := (platform.Layout{Root: root}).Prune(gens...); err != nil {
			t.Fatalf("kill %d: Prune(%v): %v", i, gens, err)
		}
		if got := rootEntries(t, root); !slices.Equal(got, want) {
			t.Fatalf("kill %d: right after Prune(%v), Root holds %v, want %v", i, gens, got, want)
		}
		if err := p.Boot(); err != nil {
			t.Fatalf("kill %d: Boot: %v", i, err)
		}
		if got := rootEntries(t, root); len(got) != 0 {
			t.Fatalf("kill %d: right after Boot, Root holds %v", i, got)
		}
		if stray := strayEntries(t, root); len(stray) != 0 || len(generations(t, p)) != 0 {
			t.Fatalf("kill %d: after Boot, Root holds %v", i, rootEntries(t, root))
		}
		if _, err := p.Publish(context.Background(), 1, variants[i%4], 0); err != nil {
			t.Fatalf("kill %d: publish after the crash: %v", i, err)
		}
	}
	if dirsChecked == 0 {
		t.Fatal("no generation directory was checked")
	}
	t.Logf("%d kills, %d generation directories checked", kills, dirsChecked)
}
