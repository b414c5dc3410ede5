// Package dirlife manages the on-disk lifecycle of one directory per ID
// under a root directory that it owns: staged, atomic and durable writes,
// atomic replacement, listing, pruning to a keep set and reset at boot.
//
// A [Layout] names its root and a [Codec] that turns IDs into directory
// names. [Layout.Write] stages files beside the target and renames them into
// place, so a reader sees an ID's directory either absent or complete, also
// after the writer is killed at any instant; rewriting an ID swaps the new
// directory in with no instant where the path is missing. By default a
// Write's directory survives power loss once Write returns. [Layout.Prune]
// removes everything but the directories to keep; [Layout.Reset] empties
// the root. Every write and removal goes through an [os.Root], so a symbolic
// link planted under the root never leads the layout outside it, and Prune
// and Reset refuse a root the layout did not create (see [ErrNotOwned]).
//
// Layout values are safe for concurrent use by multiple goroutines and by
// several processes sharing one root: Write, Prune, Reset and IDs may run at
// once without corrupting one another, and Prune never removes a directory
// that a live Write is still filling. The coordination is an advisory file
// lock in the root, honoured by every Layout on that root.
//
// # Names
//
// Every name is checked before anything is written, on every platform, so
// that a layout is portable: what the layout writes on Linux, Windows and
// macOS (case-insensitive by default) can hold as written. An ID's
// directory name, as its [Codec] formats it, and each element of a file's
// path in [Files] must not
//
//   - contain a control character (0x00 to 0x1F) or one of : < > " \ | ? *;
//   - end with a dot or a space, which Windows drops;
//   - be a device name Windows reserves: CON, PRN, AUX, NUL, COM0 to COM9
//     and LPT0 to LPT9, in any case, alone or before an extension
//     ("nul.txt"), and COM and LPT with a superscript digit (COM¹, LPT³).
//
// Two paths of one Files that differ only by case ("README" and "readme",
// or the directories of "Pkg/a" and "pkg/b") are refused too: a
// case-insensitive filesystem holds them as one. An ID's name must also be
// one element of at most 255 bytes that does not start with a dot, and a
// file's path relative, clean of escapes and at most 4,095 bytes. Each
// refusal is a [*NameError] naming the offending name and the rule it
// breaks. [StringCodec] escapes whatever would break these rules, upper
// case included, so every string is an ID.
//
// # Resources
//
// A Write holds a bounded number of descriptors whatever the depth and
// width of its tree (a few dozen): each directory is opened from its
// nearest open ancestor while its entries are made, and closed once they
// are.
//
// # Limits
//
// Publication is atomic at the ID's path: whoever looks it up finds the
// directory absent or complete. A reader already inside a directory that is
// then pruned or rewritten sees it emptied under it, as the layout removes
// the copy it moved out of the path; keep what readers use out of Prune
// (the keep set is what leases are for). A lease, a keep set or any other
// protection against Prune does not protect a directory from a rewrite of
// the same ID: IDs should be immutable, one per published version. The
// name rules do not cover Unicode normalization: macOS takes "é" as one
// code point and as "e" with a combining accent for one name, and the
// layout lets both through. Atomic replacement needs
// renameat2(RENAME_EXCHANGE) (Linux 3.15 or later; ext4, xfs, btrfs, tmpfs
// and most local filesystems have it). Where the filesystem refuses it, and
// on every other operating system, a rewrite moves the old directory aside
// and renames the new one into place: the directory is then missing for the
// instant between the two renames, and a crash in that instant leaves it
// moved aside (removed by the next Prune or Reset) rather than in place.
// Durability relies on fsync reaching stable storage; network filesystems
// and disks that lie about their caches do not guarantee it. Windows has no
// way to sync a directory, so there a Write's renames are as durable as
// NTFS's metadata journal makes them. On Linux a
// durable Write calls syncfs(2) once, which also flushes whatever else is
// dirty on Root's filesystem; give Root a filesystem of its own or set
// [Layout.PerFileSync]. Durability has a second cost on rewrites: the
// replaced copy is on disk, and removing it frees its blocks (on a
// filesystem mounted with discard, several milliseconds for a small tree). The lock is
// flock(2) on Unix and LockFileEx on Windows; it does not work across
// machines sharing a network filesystem.
package dirlife
