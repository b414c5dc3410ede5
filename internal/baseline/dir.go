package baseline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DirLayout is the straightforward per-ID directory layout: files written
// with os.WriteFile into a staging directory, no syncing, replacement by
// moving the old directory aside, pruning with os.RemoveAll. It does no
// name validation, no locking and no confinement beyond filepath.Join.
type DirLayout struct {
	Root   string
	Prefix string // directory name is Prefix followed by the decimal ID
}

// Dir returns the directory of id.
func (l DirLayout) Dir(id int64) string {
	return filepath.Join(l.Root, l.Prefix+strconv.FormatInt(id, 10))
}

// Write writes files as id's directory, moving any existing one aside.
func (l DirLayout) Write(id int64, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(l.Root, 0o755); err != nil {
		return "", err
	}
	stage := filepath.Join(l.Root, fmt.Sprintf(".stage-%x", rand.Uint64()))
	if err := os.Mkdir(stage, 0o755); err != nil {
		return "", err
	}
	for name, data := range files {
		p := filepath.Join(stage, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			os.RemoveAll(stage)
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			os.RemoveAll(stage)
			return "", err
		}
	}
	dir := l.Dir(id)
	aside := ""
	if _, err := os.Lstat(dir); err == nil {
		aside = filepath.Join(l.Root, fmt.Sprintf(".aside-%x", rand.Uint64()))
		if err := os.Rename(dir, aside); err != nil {
			os.RemoveAll(stage)
			return "", err
		}
	}
	if err := os.Rename(stage, dir); err != nil {
		if aside != "" {
			os.Rename(aside, dir)
		}
		os.RemoveAll(stage)
		return "", err
	}
	if aside != "" {
		os.RemoveAll(aside)
	}
	return dir, nil
}

// IDs lists the IDs of the directories under Root, ascending.
func (l DirLayout) IDs() ([]int64, error) {
	entries, err := os.ReadDir(l.Root)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, e := range entries {
		digits, ok := strings.CutPrefix(e.Name(), l.Prefix)
		if !ok || !e.IsDir() {
			continue
		}
		if id, err := strconv.ParseInt(digits, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Prune removes everything under Root but the directories of keep.
func (l DirLayout) Prune(keep ...int64) error {
	entries, err := os.ReadDir(l.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	kept := map[string]bool{}
	for _, id := range keep {
		kept[filepath.Base(l.Dir(id))] = true
	}
	for _, e := range entries {
		if !kept[e.Name()] {
			if err := os.RemoveAll(filepath.Join(l.Root, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
