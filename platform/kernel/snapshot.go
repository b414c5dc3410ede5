package kernel

import (
	"context"

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

// Digest returns the content digest of a module's files, the one
// Platform.Digest and InstanceSnapshot.Digest hold: "sha256:" and 64
// hexadecimal digits over the names in order, each with its length, its
// contents' length and their SHA-256. It covers every byte a build or
// render can read of the files and nothing else (not their modes), so
// equal digests mean equal evaluations.
func Digest(files map[string][]byte) string { return modread.Digest(files) }
