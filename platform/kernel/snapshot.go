package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"testing/fstest"

	"cuelang.org/go/cue"

	"leasekit.dev/platform/kernel/internal/modread"
)

// An Instance is an instance module: its files, or a directory holding
// them. Exactly one of Dir and Files is set.
type Instance struct {
	// Dir is the module's directory on disk.
	Dir string

	// Files maps slash-separated paths to contents, cue.mod/module.cue
	// included. Errors name the module "instance" and its files by their
	// paths here.
	Files map[string][]byte
}

// An InstanceSnapshot is an instance module as one read found it: the
// bytes of its files, and their digest. A module whose tree holds only
// directories and regular files, within the Limits, is read whole without
// parsing anything; any other is read as the CUE loader reads it, which
// refuses what it must.
// [Kernel.ReadInstance] makes one; a Render of it ([RenderInput].Snapshot)
// renders exactly those bytes and reads nothing more of the instance, so a
// digest taken from a snapshot is the digest of what was rendered. A
// snapshot is immutable and safe to share between goroutines.
type InstanceSnapshot struct {
	dir    string            // the name errors give the module: its absolute directory, or "instance"
	files  map[string][]byte // slash-separated path in the module to contents; never changed
	digest string
	size   int64
}

// Digest returns the digest of the snapshot's files: "sha256:" and 64
// hexadecimal digits over their names and contents, encoded as
// [Platform].Digest is. Two snapshots with the same digest render the
// same, save for the directory their errors name ([InstanceSnapshot.Dir]).
func (s *InstanceSnapshot) Digest() string { return s.digest }

// Dir returns the name a render's errors give the module: the absolute
// directory of an instance read from Dir, or "instance" for one given as
// Files.
func (s *InstanceSnapshot) Dir() string { return s.dir }

// Size returns the bytes of the snapshot's files.
func (s *InstanceSnapshot) Size() int64 { return s.size }

// ReadInstance reads the instance module in once, under k's Limits: a Dir
// through an os.Root, as Render reads it, or the Files given, copied.
// Each file is hashed as it is read. A tree read whole is checked when it
// is rendered; one read as the loader reads it may fail here, with a
// [*FileError] or [*LimitError] for input refused or an [*Error] for a
// module the loader cannot load. ReadInstance returns ctx.Err() once ctx
// is done (at once, even while a read is blocked), and an error for a
// malformed Instance.
//
// Render of in is Render of the snapshot ReadInstance returns for it:
// one path, errors included; and a render of a tree read whole is the
// render of it read as the loader reads it, errors included (a
// differential test holds them equal).
func (k *Kernel) ReadInstance(ctx context.Context, in Instance) (*InstanceSnapshot, error) {
	limits, err := k.limits()
	if err != nil {
		return nil, err
	}
	return readInstanceSnapshot(ctx, limits, in, false)
}

// readInstanceSnapshot is ReadInstance under limits; see
// readInstanceModule for loaderReads.
func readInstanceSnapshot(ctx context.Context, limits Limits, in Instance, loaderReads bool) (*InstanceSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, m, err := readInstanceModule(ctx, limits, in, loaderReads)
	if err != nil {
		if dir == "" { // misuse, not a problem in a module
			return nil, err
		}
		return nil, moduleError("render", dir, err)
	}
	return &InstanceSnapshot{dir: dir, files: m.files, digest: m.digest, size: m.size}, nil
}

// plainModule is a module read whole, unparsed.
func plainModule(m modread.Module) loadedModule {
	return loadedModule{files: m.Files, size: m.Size, digest: m.Digest}
}

// Digest returns the content digest of a module's files, the one
// Platform.Digest and InstanceSnapshot.Digest hold: "sha256:" and 64
// hexadecimal digits over the names in order, each with its length, its
// contents' length and their SHA-256. It covers every byte a build or
// render can read of the files and nothing else (not their modes), so
// equal digests mean equal evaluations.
func Digest(files map[string][]byte) string { return modread.Digest(files) }

// readInstanceModule reads the instance module in: every file of a plain
// tree within limits (see modread.ReadPlain), unless loaderReads is set,
// or else the files the loader chooses. It returns the name its errors
// give the module: "" for a malformed Instance. A module in a directory
// is read on a goroutine of its own, waited for as ctx allows; one in
// memory cannot block.
func readInstanceModule(ctx context.Context, limits Limits, in Instance, loaderReads bool) (string, loadedModule, error) {
	switch {
	case in.Dir != "" && in.Files != nil:
		return "", loadedModule{}, errors.New("kernel: render: the instance has both Dir and Files")
	case in.Dir != "":
		dir, err := filepath.Abs(in.Dir)
		if err != nil {
			return in.Dir, loadedModule{}, err
		}
		m, err := loadAside(ctx, func() (loadedModule, error) {
			src, closeSrc, err := modread.OpenDir(dir)
			if err != nil {
				return loadedModule{}, err
			}
			defer closeSrc()
			if !loaderReads {
				if m, ok := modread.ReadPlain(ctx, limits.read(), src); ok {
					return plainModule(m), nil
				}
				if err := ctx.Err(); err != nil {
					return loadedModule{}, err
				}
			}
			name := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
			return loadSourceMode(ctx, limits, src, name, parseAll)
		})
		return dir, m, err
	case len(in.Files) > 0:
		const dir = "instance"
		if n := len(in.Files); n > limits.MaxFiles {
			return dir, loadedModule{}, &LimitError{Limit: "MaxFiles", File: dir, Value: int64(n), Max: int64(limits.MaxFiles)}
		}
		fsys := fstest.MapFS{}
		for name, data := range in.Files {
			if !fs.ValidPath(name) {
				return dir, loadedModule{}, fmt.Errorf("instance file %q: not a valid slash-separated relative path", name)
			}
			fsys[name] = &fstest.MapFile{Data: data}
		}
		if !loaderReads {
			if m, ok := modread.CopyPlain(limits.read(), in.Files); ok {
				return dir, plainModule(m), nil
			}
		}
		m, err := loadSourceMode(ctx, limits, modread.Memory(fsys), func(p string) string { return path.Join(dir, p) }, parseAll)
		return dir, m, err
	default:
		return "", loadedModule{}, errors.New("kernel: render: no instance (set Dir or Files)")
	}
}

// loadSnapshot loads and builds the instance module s holds into cc,
// reading nothing but its bytes, under limits. Its errors name s.dir's
// files.
func loadSnapshot(ctx context.Context, cc *cue.Context, limits Limits, s *InstanceSnapshot) (cue.Value, error) {
	fsys := make(fstest.MapFS, len(s.files))
	for name, data := range s.files {
		fsys[name] = &fstest.MapFile{Data: data}
	}
	name := func(p string) string { return path.Join(s.dir, p) }
	if s.dir != "instance" {
		name = func(p string) string { return filepath.Join(s.dir, filepath.FromSlash(p)) }
	}
	m, err := loadSource(ctx, limits, modread.Memory(fsys), name)
	if err != nil {
		return cue.Value{}, err
	}
	return buildPackage(ctx, cc, m.inst)
}
