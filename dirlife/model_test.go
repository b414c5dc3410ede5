package dirlife

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/dirlife/internal/names"
	"pgregory.net/rapid"
)

// TestLayoutModel drives a Layout with random Write (new IDs and rewrites,
// with or without an atomic exchange; by Files, streamed and
// copied, these two also as identical re-publishes that publish nothing),
// Prune, Reset and IDs calls against a
// map model, planting junk in Root between steps: stray files, fake staging
// and moved-aside directories, symbolic links named like IDs, files named
// like IDs. It also strands rewrites (the rename into place and the move
// back both fail) and interrupts them (a crash between the two renames):
// the ID is then absent until a Prune keeps it and restores its last
// published directory. After every step (and Settle) the disk equals the
// model: Root lists exactly the model's IDs, the junk planted since the
// last Prune or Reset and the copies stranded since, and nothing else of
// the layout's own; nothing outside Root has changed.
func TestLayoutModel(t *testing.T) {
	errModelFault := errors.New("injected fault")
	tmp := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		base, err := os.MkdirTemp(tmp, "case")
		if err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(base, "outside")
		if err := os.MkdirAll(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		l := Layout[int64]{
			Root:   filepath.Join(base, "root"),
			Codec:  IntCodec[int64]{Prefix: "gen-"},
			NoSync: rapid.Bool().Draw(t, "nosync"),
		}
		model := map[int64]Files{}
		junk := map[string]bool{} // names planted in Root
		rootExists := false
		held := map[int64][]Files{} // moved-aside copies of absent IDs, oldest first
		strays := 0                 // staging directories of stranded rewrites

		// fallback forces the move-aside path on l, failing the renames
		// into name's path whose numbers (from 1, the publication) are in
		// fail.
		fallback := func(name string, fail ...int) faultFunc {
			n := 0
			return func(step, to string) error {
				switch {
				case step == stepExchange:
					return errExchangeRefused
				case step == stepRename && to == name:
					n++
					if slices.Contains(fail, n) {
						return errModelFault
					}
				}
				return nil
			}
		}
		heldID := func(t *rapid.T) int64 {
			var ids []int64
			for id := range model {
				ids = append(ids, id)
			}
			if len(ids) == 0 {
				t.Skip("no ID to rewrite")
			}
			slices.Sort(ids)
			return rapid.SampledFrom(ids).Draw(t, "id")
		}

		fileGen := rapid.MapOfN(
			rapid.SampledFrom([]string{"a", "b", "m/x.cue", "m/y.cue", "m/n/z", "deep/er/still/f"}),
			rapid.SliceOfN(rapid.Byte(), 0, 64), 1, 4)

		t.Repeat(map[string]func(*rapid.T){
			"Write": func(t *rapid.T) {
				id := rapid.Int64Range(-2, 12).Draw(t, "id")
				files := Files(fileGen.Draw(t, "files"))
				if rapid.Bool().Draw(t, "no exchange") {
					l.faults = fallback(l.Codec.Format(id))
				}
				dir, err := l.Write(id, files)
				l.faults = nil
				if err != nil {
					t.Fatalf("Write(%d): %v", id, err)
				}
				if dir != l.Dir(id) {
					t.Fatalf("Write returned %q, want %q", dir, l.Dir(id))
				}
				model[id] = files
				delete(junk, l.Codec.Format(id)) // a planted entry of that name was replaced
				rootExists = true
			},
			"WriteStream": func(t *rapid.T) {
				id := rapid.Int64Range(-2, 12).Draw(t, "id")
				files := Files(fileGen.Draw(t, "files"))
				cur, held := model[id]
				if held && rapid.Bool().Draw(t, "same content") {
					files = cur
				}
				k := streamKinds[rapid.IntRange(1, len(streamKinds)-1).Draw(t, "kind")] // Write has its own action
				var opts StreamOptions
				if held && rapid.Bool().Draw(t, "current") {
					opts.Current, _ = digestFiles(cur)
				}
				if rapid.Bool().Draw(t, "no exchange") {
					l.faults = fallback(l.Codec.Format(id))
				}
				w, err := k.write(l, id, treeOf(files), opts)
				l.faults = nil
				if err != nil {
					t.Fatalf("%s write(%d): %v", k.name, id, err)
				}
				want, _ := digestFiles(files)
				unchanged := !opts.Current.IsZero() && want == opts.Current
				if w.Digest != want || w.Published == unchanged || w.Dir != l.Dir(id) {
					t.Fatalf("%s write(%d) = %+v, want digest %v, published %v", k.name, id, w, want, !unchanged)
				}
				if w.Published {
					model[id] = files
					delete(junk, l.Codec.Format(id))
					rootExists = true
				}
			},
			"StrandRewrite": func(t *rapid.T) {
				id := heldID(t)
				files := Files(fileGen.Draw(t, "files"))
				l.faults = fallback(l.Codec.Format(id), 2, 3)
				_, err := l.Write(id, files)
				l.faults = nil
				if !errors.Is(err, errModelFault) {
					t.Fatalf("stranded Write(%d) = %v, want the injected faults", id, err)
				}
				held[id] = append(held[id], model[id])
				delete(model, id)
				strays++
			},
			"InterruptRewrite": func(t *rapid.T) {
				id := heldID(t)
				name := l.Codec.Format(id)
				if err := os.Rename(l.Dir(id), filepath.Join(l.Root, names.HeldName(name))); err != nil {
					t.Fatal(err)
				}
				held[id] = append(held[id], model[id])
				delete(model, id)
			},
			"Prune": func(t *rapid.T) {
				keep := rapid.SliceOfN(rapid.Int64Range(-2, 14), 0, 4).Draw(t, "keep")
				if err := l.Prune(keep...); err != nil {
					t.Fatalf("Prune(%v): %v", keep, err)
				}
				for id := range model {
					if !slices.Contains(keep, id) {
						delete(model, id)
					}
				}
				for _, id := range keep {
					if _, ok := model[id]; !ok && len(held[id]) > 0 {
						model[id] = held[id][len(held[id])-1] // the last published
					}
				}
				clear(junk)
				clear(held)
				strays = 0
			},
			"Reset": func(t *rapid.T) {
				if err := l.Reset(); err != nil {
					t.Fatalf("Reset: %v", err)
				}
				clear(model)
				clear(junk)
				clear(held)
				strays = 0
				rootExists = true
			},
			"PlantJunk": func(t *rapid.T) {
				if !rootExists {
					t.Skip("no root to plant in")
				}
				kind := rapid.SampledFrom([]string{"file", "stage", "aside", "idlink", "idfile", "marker-temp"}).Draw(t, "kind")
				n := rapid.IntRange(0, 20).Draw(t, "n")
				var name string
				var err error
				switch kind {
				case "file":
					name = fmt.Sprintf("junk-%d", n)
					err = os.WriteFile(filepath.Join(l.Root, name), []byte("junk"), 0o644)
				case "stage", "aside":
					prefix := stagePrefix
					if kind == "aside" {
						prefix = asidePrefix
					}
					name = fmt.Sprintf("%s%d", prefix, n)
					err = os.MkdirAll(filepath.Join(l.Root, name, "half"), 0o755)
				case "idlink", "idfile":
					id := int64(n) - 2
					if _, held := model[id]; held {
						t.Skip("that ID has a real directory")
					}
					name = l.Codec.Format(id)
					if junk[name] {
						t.Skip("already planted")
					}
					if kind == "idlink" {
						err = os.Symlink(outside, filepath.Join(l.Root, name))
					} else {
						err = os.WriteFile(filepath.Join(l.Root, name), []byte("not a dir"), 0o644)
					}
				case "marker-temp":
					name = fmt.Sprintf("%s%d", markerTemp, n)
					err = os.WriteFile(filepath.Join(l.Root, name), nil, 0o644)
				}
				if os.IsExist(err) {
					t.Skip("already planted")
				}
				if err != nil {
					t.Fatal(err)
				}
				junk[name] = true
			},
			"": func(t *rapid.T) {
				ids, err := l.IDs()
				if err != nil {
					t.Fatalf("IDs: %v", err)
				}
				var want []int64
				for id := range model {
					want = append(want, id)
				}
				slices.Sort(want)
				if !slices.Equal(ids, want) {
					t.Fatalf("IDs() = %v, want %v", ids, want)
				}
				for id, files := range model {
					if got := readTree(t, l.Dir(id)); !sameFiles(got, files) {
						t.Fatalf("Dir(%d) holds %v, want %v", id, got, files)
					}
				}
				if err := l.Settle(context.Background()); err != nil {
					t.Fatalf("Settle: %v", err)
				}
				if rootExists {
					var wantNames []string
					for id := range model {
						wantNames = append(wantNames, l.Codec.Format(id))
					}
					for name := range junk {
						wantNames = append(wantNames, name)
					}
					slices.Sort(wantNames)
					var got []string
					heldTags := map[string]int{}
					stages := 0
					for _, name := range rootEntries(t, l.Root) {
						switch tag, _, ok := names.ParseHeld(name); {
						case ok:
							heldTags[tag]++
						case strings.HasPrefix(name, stagePrefix) && !junk[name]:
							stages++
						default:
							got = append(got, name)
						}
					}
					if !slices.Equal(got, wantNames) {
						t.Fatalf("Root holds %v, want %v", got, wantNames)
					}
					wantTags := map[string]int{}
					for id, copies := range held {
						if len(copies) > 0 {
							wantTags[names.HeldTagOf(l.Codec.Format(id))] = len(copies)
						}
					}
					if !maps.Equal(heldTags, wantTags) || stages != strays {
						t.Fatalf("Root holds moved-aside copies %v and %d staging directories, want %v and %d", heldTags, stages, wantTags, strays)
					}
				}
				if got := readTree(t, outside); !sameFiles(got, Files{"precious": []byte("keep me")}) {
					t.Fatalf("outside Root changed: %v", got)
				}
			},
		})
	})
}
