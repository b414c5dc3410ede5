package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"leasekit.dev/platform/kernel"
)

// instanceFS holds the instance modules the render pool renders: one
// directory per instance, each a CUE module of its own.
//
//go:embed instances
var instanceFS embed.FS

// An Instance is one embedded instance module.
type Instance struct {
	Name  string            // the module's directory name, which is also its instance name
	Files map[string][]byte // slash-separated paths, cue.mod/module.cue included
}

// Kernel returns the instance as the kernel renders it.
func (i Instance) Kernel() kernel.Instance { return kernel.Instance{Files: i.Files} }

// Instances returns the embedded instance modules, ordered by name. They
// use the catalogs the generation stream adds, bumps and disables, and
// several require catalog versions newer than the stream's first platforms
// carry, so their renders meet both skew policies.
func Instances() []Instance {
	entries, err := fs.ReadDir(instanceFS, "instances")
	if err != nil {
		panic("demo: embedded instances: " + err.Error())
	}
	var out []Instance
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		root := path.Join("instances", e.Name())
		files := map[string][]byte{}
		err := fs.WalkDir(instanceFS, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(instanceFS, p)
			if err != nil {
				return err
			}
			rel := p[len(root)+1:]
			files[rel] = data
			return nil
		})
		if err != nil {
			panic("demo: embedded instance " + e.Name() + ": " + err.Error())
		}
		out = append(out, Instance{Name: e.Name(), Files: files})
	}
	slices.SortFunc(out, func(a, b Instance) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// LookupInstance returns the embedded instance module called name.
func LookupInstance(name string) (Instance, error) {
	var names []string
	for _, in := range Instances() {
		if in.Name == name {
			return in, nil
		}
		names = append(names, in.Name)
	}
	return Instance{}, fmt.Errorf("demo: no embedded instance %q (have %v)", name, names)
}
