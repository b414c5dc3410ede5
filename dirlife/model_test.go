package dirlife

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestLayoutModel drives a Layout with random Write (new IDs and rewrites),
// Prune, Reset and IDs calls against a map model, planting junk in Root
// between steps: stray files, fake staging and moved-aside directories,
// symbolic links named like IDs, files named like IDs. After every step
// (and Settle) the disk equals the model: Root lists exactly the model's
// IDs and the junk planted since the last Prune or Reset, and nothing of
// the layout's own; nothing outside Root has changed.
func TestLayoutModel(t *testing.T) {
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

		fileGen := rapid.MapOfN(
			rapid.SampledFrom([]string{"a", "b", "m/x.cue", "m/y.cue", "m/n/z", "deep/er/still/f"}),
			rapid.SliceOfN(rapid.Byte(), 0, 64), 1, 4)

		t.Repeat(map[string]func(*rapid.T){
			"Write": func(t *rapid.T) {
				id := rapid.Int64Range(-2, 12).Draw(t, "id")
				files := Files(fileGen.Draw(t, "files"))
				dir, err := l.Write(id, files)
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
				clear(junk)
			},
			"Reset": func(t *rapid.T) {
				if err := l.Reset(); err != nil {
					t.Fatalf("Reset: %v", err)
				}
				clear(model)
				clear(junk)
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
				if err := l.Settle(); err != nil {
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
					if got := rootEntries(t, l.Root); !slices.Equal(got, wantNames) {
						t.Fatalf("Root holds %v, want %v", got, wantNames)
					}
				}
				if got := readTree(t, outside); !sameFiles(got, Files{"precious": []byte("keep me")}) {
					t.Fatalf("outside Root changed: %v", got)
				}
			},
		})
	})
}
