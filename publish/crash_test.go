//go:build unix

package publish_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/crash"
	"leasekit.dev/publish"
)

const (
	envAdoptChild = "PUBLISH_ADOPT_CRASH_ROOT"
	envAdoptSeed  = "PUBLISH_ADOPT_CRASH_SEED"
)

// crashFiles is the content a crash child publishes at key as its version
// v: a manifest naming both, and files whose bytes and number depend on
// them, so that a directory holding part of one version, or parts of two,
// is told from every complete one.
func crashFiles(key int64, v int) dirlife.Files {
	files := dirlife.Files{"MANIFEST": fmt.Appendf(nil, "%d %d", key, v)}
	for i := range 3 + v%5 {
		files[fmt.Sprintf("data/%d", i)] = bytes.Repeat(fmt.Appendf(nil, "%d.%d.%d;", key, v, i), 2000+v%3*1000)
	}
	return files
}

// TestAdoptCrashChild is the child of TestAdoptCrash: it publishes under
// Adopt, at keys that grow and repeat, until it is killed.
func TestAdoptCrashChild(t *testing.T) {
	crash.Child(t)
	root := os.Getenv(envAdoptChild)
	seed, _ := strconv.ParseUint(os.Getenv(envAdoptSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 3))
	p := newPublisher(t, root, publish.Options[int64, dirlife.Digest, int]{Adopt: true})
	key := int64(1)
	for v := 0; ; v++ {
		key += rng.Int64N(2)
		if _, err := p.Publish(context.Background(), key, crashFiles(key, v), 0); err != nil {
			t.Fatal(err)
		}
		crash.Ready()
	}
}

// TestAdoptCrash kills a publishing child process with SIGKILL at random
// instants, 30 times, each on the Root the last one left: after each
// kill, a Publisher booted under Adopt keeps only complete directories
// whose content is the digest recorded for them, Root holds nothing else,
// and the Publish of the newest kept content claims it without writing.
func TestAdoptCrash(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	kills := 30
	if testing.Short() {
		kills = 10
	}
	root := filepath.Join(t.TempDir(), "root")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	keptAny := 0
	for i := range kills {
		// A random instant of the publishes that follow the first: where
		// the kill lands decides nothing the test asserts.
		crash.Start(t, "TestAdoptCrashChild", envAdoptChild+"="+root, envAdoptSeed+"="+strconv.Itoa(i)).
			Kill(time.Duration(rng.IntN(50_000)) * time.Microsecond)

		p := newPublisher(t, root, publish.Options[int64, dirlife.Digest, int]{Adopt: true})
		st := p.Stats()
		var names []string
		var newest dirlife.Files
		var newestKey int64
		newestV := -1
		for _, d := range st.Dirs {
			dir := filepath.Join(root, d.Name)
			files, err := readTree(dir)
			if err != nil {
				t.Fatal(err)
			}
			m := strings.Fields(string(files["MANIFEST"]))
			if len(m) != 2 {
				t.Fatalf("kill %d: kept %s holds no manifest (%d files)", i, d.Name, len(files))
			}
			key, _ := strconv.ParseInt(m[0], 10, 64)
			v, _ := strconv.Atoi(m[1])
			if want := crashFiles(key, v); key != d.Identity.Key || !maps.EqualFunc(files, want, bytes.Equal) {
				t.Fatalf("kill %d: kept %s is not a complete version (%d files, manifest %q)", i, d.Name, len(files), files["MANIFEST"])
			}
			if got := publish.DigestFiles(files); got != d.Identity.Digest {
				t.Fatalf("kill %d: kept %s holds %v, recorded %v", i, d.Name, got, d.Identity.Digest)
			}
			names = append(names, d.Name)
			if v > newestV {
				newest, newestKey, newestV = files, key, v
			}
		}
		slices.Sort(names)
		if got := onDisk(t, root); !slices.Equal(got, names) {
			t.Fatalf("kill %d: after Boot, Root holds %v, kept %v", i, got, names)
		}
		if st.Kept != len(names) {
			t.Fatalf("kill %d: Stats.Kept %d, %d directories kept", i, st.Kept, len(names))
		}
		if newest == nil {
			continue
		}
		keptAny++
		if _, err := p.Publish(context.Background(), newestKey, newest, 0); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Adopted != 1 || st.Discarded != 0 {
			t.Fatalf("kill %d: the newest kept directory was not claimed: Adopted %d, Discarded %d", i, st.Adopted, st.Discarded)
		}
		if err := p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills, %d left directories to keep", kills, keptAny)
	if keptAny == 0 {
		t.Error("no kill left a directory to keep")
	}
}
