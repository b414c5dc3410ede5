// Package dirlife manages one directory per ID under a root directory it
// owns: atomic, durable writes and replacements, pruning to a keep set and
// reset at boot, confined to the root and safe across goroutines and
// processes.
//
// A [Layout] names its root and a [Codec] that turns IDs into directory
// names. The promise: whoever looks up an ID's path finds the directory
// absent or complete, also after the writer is killed at any instant, and
// nothing the layout does leads outside its root.
//
// Layout values are safe for concurrent use by multiple goroutines and by
// several processes sharing one root: Write, Prune, Reset, IDs and Settle
// may run at once without corrupting one another, and Prune never removes a
// directory that a live Write is still filling. The coordination is an
// advisory lock on the root, honoured by every Layout on that root, behind
// an in-process reader/writer lock: however many goroutines wait, at most
// one OS thread per root and process waits in the kernel.
//
// # Writes and removals
//
// [Layout.Write] stages files beside the target and renames them into
// place; rewriting an ID swaps the new directory in with no instant where
// the path is missing. By default a Write's directory survives power loss
// once Write returns. A Write whose sync after the rename fails reports
// [ErrNotDurable] and leaves its directory published: a publication is
// never undone, so the last Write to publish wins. [Layout.Prune] removes
// everything but the directories to keep; [Layout.Reset] empties the root.
// Every write and removal goes through an [os.Root], so a symbolic link
// planted under the root never leads the layout outside it; removal never
// crosses into another filesystem mounted under the root
// ([ErrMountPoint]); and Prune and Reset refuse a non-empty root that no
// layout ever claimed (see [ErrNotOwned]).
//
// At rest the root holds only ID directories. The layout records that it
// owns the root in an extended attribute of the root itself
// (user.leasekit.dirlife), and locks the root's own directory, so neither
// needs an entry in it. Prune and a replacing Write remove what they set
// aside before they return, outside the exclusive lock, so that when they
// return its space is free; [Layout.DeferRemoval] leaves that removal to
// the background instead, for callers that must not wait for it, and
// [Layout.Settle] waits for it. A removal that hangs (a stuck network or
// FUSE mount, a huge tree) costs its caller at most
// [Layout.RemovalDeadline] and blocks no other call.
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
// # Modes, links and streamed writes
//
// [Files] are written 0o644 in directories 0o755, subject to the umask as
// with [os.WriteFile]. A [Tree] gives each file its permission bits, set
// exactly, and holds symbolic links. [Layout.WriteStream] lets the caller
// fill the staging directory through an [os.Root], and [Layout.CopyFS]
// copies an [fs.FS] a buffer at a time: neither holds the tree in memory.
// However the staging directory was filled, every entry is checked before
// it is published, as names are:
//
//   - the setuid, setgid and sticky bits are refused, not dropped, but
//     for the setgid bit of a directory whose parent has it, on a Root
//     that has it (a shared group directory, a volume mounted with an
//     fsGroup): the system passes it on to every directory made there,
//     Write's included, so it is Root's, not the caller's, and it stays;
//   - only regular files, directories and symbolic links are written, and
//     a streamed file with other hard links is refused;
//   - a symbolic link must be relative and resolve, as the system follows
//     it through other links, to an entry of the same directory: an
//     absolute, escaping, dangling or looping link is refused;
//   - a streamed directory must be readable, writable and searchable by
//     its owner, so that Prune can remove what it holds.
//
// A streamed write reports the [Digest] of what it staged, the one
// [TreeDigest] gives the same content as a Tree or as Files; told the
// digest of the current content, an identical re-publish discards its
// staging directory instead of replacing the directory.
//
// # Resources
//
// A Write holds a bounded number of descriptors whatever the depth and
// width of its tree (a few dozen): each directory is opened from its
// nearest open ancestor while its entries are made, and closed once they
// are. A streamed write holds as many, besides its fill's, and memory that
// does not grow with the bytes it writes.
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
// layout lets both through.
//
// Atomic replacement needs renameat2(RENAME_EXCHANGE) (Linux 3.15 or
// later; ext4, xfs, btrfs, tmpfs and most local filesystems have it). Where
// the filesystem refuses it, and on every other operating system, a
// rewrite moves the old directory aside and renames the new one into
// place: the directory is then missing for the instant between the two
// renames. A crash in that instant leaves the old directory moved aside
// under a name that records its ID; should both the rename into place and
// the move back fail, Write returns an error naming both copies and removes
// neither. Either way the ID is absent (IDs does not list it) until the
// next Prune that keeps it, which restores the old directory, the last one
// published, exactly as it was; the new one, never published, is garbage.
// A Prune that does not keep the ID, and Reset, remove both copies, and a
// Write of the ID meanwhile publishes anew (its moved-aside copy is then
// garbage too). Should a crash strand several copies of one ID, Prune
// restores the one moved aside last, as the clock tells.
//
// Durability relies on fsync reaching stable storage; network filesystems
// and disks that lie about their caches do not guarantee it. Windows has no
// way to sync a directory, so there a Write's renames are as durable as
// NTFS's metadata journal makes them; there a durable streamed write
// opens each staged file for writing to flush it, so it fails on a file
// made read-only. On Linux a durable Write calls
// syncfs(2) once, which also flushes whatever else is dirty on Root's
// filesystem; give Root a filesystem of its own or set
// [Layout.PerFileSync]. [ErrNotDurable] means the directory is published
// but may not survive power loss: write it again.
//
// Garbage needs no sync, and Prune syncs nothing: after power loss, an ID
// that a Prune removed just before may be listed again, complete and as it
// was published, never partial; the state is then the one a crash just
// before that Prune leaves, which every caller meets anyway, and the next
// Prune removes it again. (The rename that takes a directory out of its
// path precedes every removal in it, and journaling filesystems commit
// metadata in order; the next durable Write's sync of Root commits the
// renames too.) A caller for whom a pruned ID must never come back (one
// that prunes a newer ID to roll back) writes a new ID instead.
//
// Removal: garbage is removed out of every ID's path, under an aside name
// that no ID or staging directory can take, on the process's removal
// goroutines: four at most, for every root and call together, so that
// the threads removal takes do not grow with the number of callers; a
// removal waits for a free one, in the order it was started. At most one
// removal of an entry runs at once in a process: a call leaves an entry
// that another call of the process is removing to that call. A removal
// past [Layout.RemovalDeadline], running or still waiting for a
// goroutine, makes the call return a [*StalledError] and goes on; one
// blocked in the kernel keeps its goroutine, its slot of the four, and an
// OS thread, until its system call returns: while four removals hang,
// every other waits, and its caller returns at its deadline. A
// removal that fails (a mount point under the tree, a permission) is
// returned by the call that waited for it, or, when none did (deferred, or
// past the deadline), reported once by the next Prune or [Layout.Settle]
// while what it left is still in the root; what it left is removed by the
// next Prune. A process that exits first leaves its garbage to the next
// Prune or Reset. A process's state for a root (its lock, its removals)
// goes away when no call uses the root and no failure waits to be
// reported; such failures are kept for at most 16 roots, the oldest
// forgotten first. Settle waits only for the calling process's removals.
//
// Ownership: on Linux and macOS the extended attribute is set on the root
// directory; where its filesystem holds none (it reports ENOTSUP: some
// network and FUSE filesystems, and tmpfs before Linux 6.6), and on every
// other system, a marker file .dirlife-root in the root records it
// instead and stays at rest. A root claimed by the marker of an earlier
// version is still owned, and gets the attribute (its marker and lock
// files then go) where the filesystem holds one. Processes sharing a root
// must run the same version of the layout: an earlier one locks its lock
// file, not the root.
//
// Locking: flock(2) on the root directory's own descriptor on Unix;
// LockFileEx on Windows, where it locks a file and not a directory, so
// there the root also holds the lock file .dirlife-lock (as it holds the
// marker: Windows has no extended attributes for the layout). Neither works
// across machines sharing a network filesystem.
//
// Mounts: Prune and Reset compare the device of every directory they would
// descend into or rename with the root's, and refuse, naming it, one on
// another device: a filesystem mounted under the root is never emptied.
// What holds it (its parent directories) stays too. A bind mount of a
// directory of the root's own filesystem has the root's device: on Linux
// (5.8 and later) the system tells the root of every mount, and Prune and
// Reset never descend into one either; elsewhere such a bind mount is not
// told apart. On Windows the device comparison is not made (a FileInfo
// there carries no volume).
package dirlife
