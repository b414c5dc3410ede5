package readme

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/dirlife"
)

// The README's generic recipe loses nothing: a late stale reconcile, or a
// repeated one, neither removes the current generation nor rewrites a
// leased one, and after every step the root holds exactly the current
// generation and the leased ones.
func TestGenericRecipeKeepsCurrentAndLeased(t *testing.T) {
	errStale, errNotReady := errors.New("stale"), errors.New("not ready")
	root := filepath.Join(t.TempDir(), "platform")
	var r recipe
	if err := readmeGeneric(root, errStale, errNotReady, &r); err != nil {
		t.Fatal(err)
	}
	layout := dirlife.Layout[int64]{Root: root, Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}}
	files := func(gen int64) dirlife.Files {
		return dirlife.Files{"module.cue": fmt.Appendf(nil, "generation: %d\n", gen)}
	}
	// onDisk checks, once background removals are done, that Root holds
	// exactly want, each with its own files.
	onDisk := func(t *testing.T, step string, want ...int64) {
		t.Helper()
		if err := layout.Settle(); err != nil {
			t.Fatalf("%s: Settle: %v", step, err)
		}
		ids, err := layout.IDs()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("%s: on disk %v, want %v", step, ids, want)
		}
		for _, id := range ids {
			got, err := os.ReadFile(filepath.Join(layout.Dir(id), "module.cue"))
			if err != nil || string(got) != string(files(id)["module.cue"]) {
				t.Fatalf("%s: generation %d holds %q, %v", step, id, got, err)
			}
		}
	}
	reconcile := func(t *testing.T, gen int64, want error) {
		t.Helper()
		if err := r.reconcile(gen, files(gen)); !errors.Is(err, want) {
			t.Fatalf("reconcile(%d) = %v, want %v", gen, err, want)
		}
	}
	// serving checks that the reader renders gen's directory.
	serving := func(t *testing.T, gen int64) {
		t.Helper()
		err := r.read(func(dir string) error {
			if dir != layout.Dir(gen) {
				return fmt.Errorf("read %s, want %s", dir, layout.Dir(gen))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	if err := r.read(func(string) error { return nil }); !errors.Is(err, errNotReady) {
		t.Fatalf("read before any reconcile = %v, want not ready", err)
	}
	reconcile(t, 1, nil)
	onDisk(t, "reconcile 1", 1)
	err := r.read(func(dir string) error {
		// generation 1 is leased while newer ones land
		reconcile(t, 2, nil)
		onDisk(t, "reconcile 2 with 1 leased", 1, 2)
		reconcile(t, 3, nil)
		onDisk(t, "reconcile 3 with 1 leased", 1, 3)
		reconcile(t, 1, errStale) // late, and leased: never rewritten
		reconcile(t, 2, errStale) // late: the current generation stays
		onDisk(t, "late reconciles of 1 and 2", 1, 3)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	serving(t, 3)
	reconcile(t, 3, errStale) // again: IDs are immutable
	reconcile(t, 4, nil)
	onDisk(t, "reconcile 4, nothing leased", 4)
	serving(t, 4)

	// A failed write leaves the current generation served and on disk.
	if err := r.reconcile(5, dirlife.Files{"../escape": nil}); err == nil {
		t.Fatal("reconcile of a bad name succeeded")
	}
	onDisk(t, "failed reconcile 5", 4)
	serving(t, 4)
}

// Every go doc command the README prints works from the repository root
// and names the package's import path.
func TestReadmeGoDocCommands(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile("`(go [^`]*\\bdoc\\b[^`]*)`").FindAllStringSubmatch(string(readme), -1)
	if len(cmds) == 0 {
		t.Fatal("README.md prints no go doc command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	for _, m := range cmds {
		args := strings.Fields(m[1])
		cmd := exec.Command(goBin, args[1:]...)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		first, _, _ := strings.Cut(string(out), "\n")
		if err != nil || !strings.Contains(first, `// import "leasekit.dev/`) {
			t.Errorf("%s, from the repository root: %v; first line %q, want the package's import path", m[1], err, first)
		}
	}
}
