package publish_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/crash"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/publish"
	"pgregory.net/rapid"
)

const (
	envRestartRoot   = "PUBLISH_RESTART_CHILD_ROOT"
	envRestartLink   = "PUBLISH_RESTART_CHILD_LINK"
	envRestartScript = "PUBLISH_RESTART_CHILD_SCRIPT"
	digestAttr       = "user.leasekit.digest" // where a directory's digest is recorded
)

// restartContents are the contents the restart model publishes: a and c
// share a file, so that LinkUnchanged links; each is a few pages, so that
// a kill lands inside a write; "bad" fails the build.
var restartContents = func() []dirlife.Files {
	blob := func(s string) []byte { return bytes.Repeat([]byte(s), 3000) }
	return []dirlife.Files{
		{"MANIFEST": []byte("a"), "data/blob": blob("a;"), "data/shared": blob("shared;")},
		{"MANIFEST": []byte("b"), "data/blob": blob("b;")},
		{"MANIFEST": []byte("c"), "data/shared": blob("shared;"), "sub/deep/c": blob("c;")},
		{"bad": []byte("refused")},
	}
}()

// restartOp is one publish of a crash child's script: content c at key,
// through PublishFS when viaFS, leasing the record it sets when lease.
type restartOp struct {
	key          int64
	c            int
	viaFS, lease bool
}

func (op restartOp) String() string {
	return fmt.Sprintf("%d,%d,%t,%t", op.key, op.c, op.viaFS, op.lease)
}

func parseScript(s string) ([]restartOp, error) {
	var ops []restartOp
	for f := range strings.SplitSeq(s, ";") {
		var op restartOp
		if _, err := fmt.Sscanf(f, "%d,%d,%t,%t", &op.key, &op.c, &op.viaFS, &op.lease); err != nil {
			return nil, fmt.Errorf("op %q: %w", f, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// restartOptions are the options of every process of the restart model.
func restartOptions(link bool) publish.Options[int64, dirlife.Digest, int] {
	return publish.Options[int64, dirlife.Digest, int]{Adopt: true, LinkUnchanged: link, NoSync: true}
}

// checkServed fails t unless dir holds exactly files, as servedErr checks.
func checkServed(t fataler, dir string, files dirlife.Files, link bool) {
	t.Helper()
	if err := servedErr(dir, files, link); err != nil {
		t.Fatal(fmt.Sprintf("served directory %s: %v", dir, err))
	}
}

// servedErr returns why dir does not hold exactly files as a Publisher
// writes them: the names and bytes, files 0o644 (0o444 under link) in
// directories 0o755, nothing else.
func servedErr(dir string, files dirlife.Files, link bool) error {
	filePerm := fs.FileMode(0o644)
	if link {
		filePerm = 0o444
	}
	wantDirs := map[string]bool{".": true}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			wantDirs[d] = true
		}
	}
	got, gotDirs := dirlife.Files{}, map[string]bool{}
	err := dirtree.Walk(dir, func(rel string, fi fs.FileInfo) error {
		var err error
		switch {
		case fi.IsDir() && fi.Mode().Perm() == 0o755:
			gotDirs[rel] = true
		case fi.Mode().IsRegular() && fi.Mode().Perm() == filePerm:
			got[rel], err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		default:
			err = fmt.Errorf("%s has mode %v", rel, fi.Mode())
		}
		return err
	})
	if err == nil && (!maps.EqualFunc(got, files, bytes.Equal) || !maps.Equal(gotDirs, wantDirs)) {
		err = fmt.Errorf("it holds %d files %v in %v, not the %d published (%q)", len(got), slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(gotDirs)), len(files), files["MANIFEST"])
	}
	return err
}

// TestRestartChild is a crash child of TestRestartModel: it boots a
// Publisher under Adopt on the model's Root and runs its script of
// publishes and leases over and over, checking each record it sets, until
// it is killed.
func TestRestartChild(t *testing.T) {
	crash.Child(t)
	root := os.Getenv(envRestartRoot)
	ops, err := parseScript(os.Getenv(envRestartScript))
	if err != nil {
		t.Fatal(err)
	}
	link := os.Getenv(envRestartLink) == "true"
	p := newPublisher(t, root, restartOptions(link))
	ctx := context.Background()
	var leases []func()
	for i := 0; ; i++ {
		op := ops[i%len(ops)]
		files := restartContents[op.c]
		rec, err := publishVia(ctx, p, op.viaFS, op.key, files)
		switch {
		case errors.Is(err, publish.ErrStale), errors.Is(err, errBad):
		case err != nil:
			t.Fatal(err)
		default:
			checkServed(t, rec.Dir, files, link)
			if op.lease {
				if l, ok := p.Slot().Lease(); ok {
					leases = append(leases, l.Release)
				}
				if len(leases) > 2 {
					leases[0]()
					leases = leases[1:]
				}
			}
		}
		if i == len(ops)-1 {
			crash.Ready()
		}
	}
}

// restartKept is a directory Boot kept, in the model: the content it
// claims, and whether it holds that content exactly.
type restartKept struct {
	id     publish.Identity[int64]
	intact bool
}

// TestRestartModel drives Publishers of one Root under Adopt through
// random publishes (Publish and PublishFS, so that a content is rewritten
// beside a leased copy of itself and one to three copies of it are on
// disk), leases taken and released, removal passes, restarts (a new
// Publisher, Boot) and crashes (a child process publishing on the Root,
// killed with SIGKILL at a random instant), with accidents to the
// directories left on disk while no process runs: a byte edited in place
// (size and mtime kept, the file's other links edited with it) or in a
// replacement file, a mode changed, a file added or removed, the recorded
// digest left stale, dropped, rewritten to the edited tree's, or set to
// another content's.
//
// After every step, every byte a reader can reach through a record (the
// current one and each leased one) is what was published under the
// record's digest, in a directory holding nothing else. A Publish whose
// content some intact directory Boot kept claims serves one of those, not
// a copy of its own. The crash children check the same of every record
// they set.
func TestRestartModel(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		root := filepath.Join(tempDir(t), "root")
		link := rapid.Bool().Draw(t, "link")
		opts := restartOptions(link)
		digestOf := publish.DigestFiles
		if link {
			digestOf = publish.DigestLinked
		}
		published := map[dirlife.Digest]dirlife.Files{} // digest -> files
		for _, files := range restartContents {
			published[digestOf(files)] = files
		}
		p := newPublisher(t, root, opts)
		var (
			held   bool
			curKey int64
			curC   int // the current record's content
			leases []func() publish.Record[int64, dirlife.Digest, int]
			// The directories Boot kept that no Publish has claimed; nil
			// once a record is set or Forget ran.
			kept map[string]restartKept
			// Crash children run so far; each costs an exec.
			crashes int
		)
		releases := []func(){}
		defer func() {
			for _, r := range releases {
				r()
			}
		}()

		// publishOne publishes content c at key, through PublishFS when
		// viaFS, and checks the outcome against the model.
		publishOne := func(t *rapid.T, key int64, c int, viaFS bool) {
			files := restartContents[c]
			id := publish.Identity[int64]{Key: key, Digest: digestOf(files)}
			var intact []string
			for _, name := range slices.Sorted(maps.Keys(kept)) {
				if k := kept[name]; k.id == id && k.intact {
					intact = append(intact, name)
				}
			}
			rec, err := publishVia(ctx, p, viaFS, key, files)
			switch {
			case held && key < curKey:
				if !errors.Is(err, publish.ErrStale) {
					t.Fatalf("Publish(%d) over %d: %v, want ErrStale", key, curKey, err)
				}
				return
			case files["bad"] != nil:
				if !errors.Is(err, errBad) {
					t.Fatalf("Publish(%d, bad): %v, want the build's error", key, err)
				}
				for name, k := range kept {
					if k.id == id {
						delete(kept, name) // verified or discarded
					}
				}
				return
			case err != nil:
				t.Fatalf("%s(%d, %q): %v", way(viaFS), key, files["MANIFEST"], err)
			}
			if rec.Identity() != id {
				t.Fatalf("%s(%d, %q) set %v, want %v", way(viaFS), key, files["MANIFEST"], rec.Identity(), id)
			}
			checkServed(t, rec.Dir, files, link)
			if len(intact) > 0 && !slices.Contains(intact, filepath.Base(rec.Dir)) {
				t.Fatalf("%s(%d, %q) served %s, want one of the intact kept %v", way(viaFS), key, files["MANIFEST"], rec.Dir, intact)
			}
			held, curKey, curC, kept = true, key, c, nil
		}

		// rewrite rewrites the current content beside a leased copy of
		// itself, once or twice, leaving two or three copies of it on
		// disk, if a record is held, and reports whether one was.
		rewrite := func(t *rapid.T) bool {
			if !held {
				return false
			}
			c := curC
			for range rapid.IntRange(1, 2).Draw(t, "copies") {
				l, _ := p.Slot().Lease()
				leases = append(leases, l.Value)
				releases = append(releases, l.Release)
				publishOne(t, curKey, (c+1+rapid.IntRange(0, 1).Draw(t, "other"))%3, true)
				publishOne(t, curKey, c, true)
			}
			return true
		}

		// republish is what a restarted controller does: it publishes
		// again the content a directory on disk claims to hold, if one
		// does, and reports whether one did.
		republish := func(t *rapid.T) bool {
			var claims []int // the kept directories' contents, as indexes
			var keys []int64
			for _, name := range slices.Sorted(maps.Keys(kept)) {
				for c, files := range restartContents {
					if kept[name].id.Digest == digestOf(files) {
						claims, keys = append(claims, c), append(keys, kept[name].id.Key)
					}
				}
			}
			if len(claims) == 0 {
				return false
			}
			i := rapid.IntRange(0, len(claims)-1).Draw(t, "kept")
			publishOne(t, keys[i], claims[i], rapid.Bool().Draw(t, "PublishFS"))
			return true
		}

		t.Repeat(map[string]func(*rapid.T){
			"Publish": func(t *rapid.T) {
				key := rapid.Int64Range(1, 2).Draw(t, "key")
				c := rapid.IntRange(0, len(restartContents)-1).Draw(t, "content")
				publishOne(t, key, c, rapid.Bool().Draw(t, "PublishFS"))
			},
			"Republish": func(t *rapid.T) {
				if !republish(t) {
					t.Skip("no kept directory claims a content")
				}
			},
			"Rewrite": func(t *rapid.T) {
				if !rewrite(t) {
					t.Skip("no current content")
				}
			},
			"Lease": func(t *rapid.T) {
				l, ok := p.Slot().Lease()
				if ok != held {
					t.Fatalf("Lease() ok = %v, want %v", ok, held)
				}
				if ok {
					leases = append(leases, l.Value)
					releases = append(releases, l.Release)
				}
			},
			"Release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				releases[i]()
				leases, releases = slices.Delete(leases, i, i+1), slices.Delete(releases, i, i+1)
			},
			"Reclaim": func(t *rapid.T) {
				for _, ev := range p.Reclaim() {
					if ev.Err != nil {
						t.Fatal(ev.Err)
					}
				}
			},
			"Forget": func(t *rapid.T) {
				p.Forget()
				held, kept = false, nil
			},
			"Restart": func(t *rapid.T) {
				if rapid.Bool().Draw(t, "rewrite first") {
					rewrite(t)
				}
				// The process ends, its leases with it.
				for _, r := range releases {
					r()
				}
				leases, releases = nil, nil
				if err := p.Settle(ctx); err != nil {
					t.Fatal(err)
				}
				accidents(t, root, published, digestOf, "before")
				if crashes < 2 && rapid.IntRange(0, 3).Draw(t, "crash") == 0 {
					crashes++
					crashChild(t, root, link)
					accidents(t, root, published, digestOf, "after the crash")
				}
				p = newPublisher(t, root, opts)
				held = false
				kept = map[string]restartKept{}
				for _, name := range onDisk(t, root) {
					k, ok := genCodec.Parse(strings.Join(strings.SplitN(name, "-", 3)[:2], "-"))
					dg, recorded := recordedDigest(t, filepath.Join(root, name))
					if !ok || !recorded {
						t.Fatalf("after Boot, Root holds %s, with no recorded digest", name)
					}
					files, isContent := published[dg]
					kept[name] = restartKept{id: publish.Identity[int64]{Key: k, Digest: dg}, intact: isContent && servedErr(filepath.Join(root, name), files, link) == nil}
				}
				if st := p.Stats(); st.Kept != len(kept) || st.Held {
					t.Fatalf("after Boot: Stats %+v, want %d kept and no record", st, len(kept))
				}
				if rapid.Bool().Draw(t, "republish at once") {
					republish(t)
				}
			},
			"": func(t *rapid.T) {
				_, cur, ok := p.Slot().Get()
				if ok != held {
					t.Fatalf("Get() ok = %v, want %v", ok, held)
				}
				recs := []publish.Record[int64, dirlife.Digest, int]{}
				if ok {
					recs = append(recs, cur)
				}
				for _, l := range leases {
					recs = append(recs, l())
				}
				for _, rec := range recs {
					files, ok := published[rec.Digest]
					if !ok {
						t.Fatalf("record %v names a digest no content has", rec.Identity())
					}
					checkServed(t, rec.Dir, files, link)
				}
			},
		})
	})
}

// recordedDigest returns the digest recorded on dir, if it carries one.
func recordedDigest(t fataler, dir string) (dirlife.Digest, bool) {
	t.Helper()
	buf := make([]byte, 128)
	n, err := syscall.Getxattr(dir, digestAttr, buf)
	if errors.Is(err, syscall.ENODATA) {
		return dirlife.Digest{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var d dirlife.Digest
	if m, err := hex.Decode(d[:], buf[:n]); err != nil || m != len(d) {
		t.Fatal(fmt.Sprintf("%s records %q, not a digest", dir, buf[:n]))
	}
	return d, true
}

func recordDigest(t fataler, dir string, d dirlife.Digest) {
	t.Helper()
	if err := syscall.Setxattr(dir, digestAttr, []byte(d.String()), 0); err != nil {
		t.Fatal(err)
	}
}

// accidentKinds are what accidents does to a directory on disk.
var accidentKinds = []string{"flip-in-place", "flip-replaced", "mode", "add", "remove", "drop-digest", "rerecord", "mislabel"}

// accidents makes zero to two random accidents to the directories under
// root while no process runs on it.
func accidents(t *rapid.T, root string, published map[dirlife.Digest]dirlife.Files, digestOf func(dirlife.Files) dirlife.Digest, when string) {
	names := onDisk(t, root)
	if len(names) == 0 {
		return
	}
	// The copies of a content that has more than one on disk, which the
	// accidents pick half the time.
	byID := map[string][]string{}
	for _, name := range names {
		if d, ok := recordedDigest(t, filepath.Join(root, name)); ok {
			id := strings.Join(strings.SplitN(name, "-", 3)[:2], "-") + "@" + d.String()
			byID[id] = append(byID[id], name)
		}
	}
	var copies []string
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		if len(byID[id]) > 1 {
			copies = append(copies, byID[id]...)
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "accidents "+when) {
		from := names
		if len(copies) > 0 && rapid.Bool().Draw(t, "a copy") {
			from = copies
		}
		dir := filepath.Join(root, rapid.SampledFrom(from).Draw(t, "directory"))
		kind := rapid.SampledFrom(accidentKinds).Draw(t, "accident")
		tree, err := readTree(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(tree) == 0 {
			continue // every file removed
		}
		rel := rapid.SampledFrom(slices.Sorted(maps.Keys(tree))).Draw(t, "file")
		f := filepath.Join(dir, filepath.FromSlash(rel))
		switch kind {
		case "flip-in-place": // every link of the file sees it
			flipInPlace(t, f)
		case "flip-replaced":
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			data := slices.Clone(tree[rel])
			data[len(data)/2] ^= 0x20
			must0(t, os.WriteFile(f+"~", data, fi.Mode()))
			must0(t, os.Chmod(f+"~", fi.Mode()))
			must0(t, os.Chtimes(f+"~", fi.ModTime(), fi.ModTime()))
			must0(t, os.Rename(f+"~", f))
		case "mode":
			must0(t, os.Chmod(f, 0o600))
		case "add":
			must0(t, os.WriteFile(filepath.Join(dir, "added"), []byte("x"), 0o644))
		case "remove":
			must0(t, os.Remove(f))
		case "drop-digest": // the directory is garbage to Boot
			if err := syscall.Removexattr(dir, digestAttr); err != nil && !errors.Is(err, syscall.ENODATA) {
				t.Fatal(err)
			}
		case "rerecord": // an edit whose digest is recorded too
			flipInPlace(t, f)
			tree, err := readTree(dir)
			if err != nil {
				t.Fatal(err)
			}
			recordDigest(t, dir, digestOf(tree))
		case "mislabel": // another content's digest
			d := rapid.SampledFrom(slices.SortedFunc(maps.Keys(published), func(a, b dirlife.Digest) int { return bytes.Compare(a[:], b[:]) })).Draw(t, "label")
			recordDigest(t, dir, d)
		}
	}
}

func must0(t fataler, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// crashChild runs a child process that publishes on root a random script of
// publishes and leases, over and over, and kills it with SIGKILL at a
// random instant once it has run the script once.
func crashChild(t *rapid.T, root string, link bool) {
	ops := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) restartOp {
		return restartOp{
			key:   rapid.Int64Range(1, 2).Draw(t, "key"),
			c:     rapid.IntRange(0, len(restartContents)-1).Draw(t, "content"),
			viaFS: rapid.Bool().Draw(t, "PublishFS"),
			lease: rapid.Bool().Draw(t, "lease"),
		}
	}), 1, 6).Draw(t, "script")
	script := make([]string, len(ops))
	for i, op := range ops {
		script[i] = op.String()
	}
	// A random instant of the publishes that follow the script's first
	// run: where the kill lands decides nothing the model asserts.
	crash.Start(t, "TestRestartChild", envRestartRoot+"="+root, envRestartLink+"="+strconv.FormatBool(link), envRestartScript+"="+strings.Join(script, ";")).
		Kill(time.Duration(rapid.IntRange(0, 3000).Draw(t, "kill after µs")) * time.Microsecond)
}
