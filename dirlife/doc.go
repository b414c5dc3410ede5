// Package dirlife manages one directory per ID under a root directory it
// owns: atomic, durable writes and replacements, pruning to a keep set and
// reset at boot, confined to the root and safe across goroutines and
// processes.
//
// A [Layout] names its root and a [Codec] that turns IDs into directory
// names. The promise: whoever looks up an ID's path finds the directory
// absent or complete, also after the writer is killed at any instant, and
// nothing the layout does leads outside its root. [Layout.WriteStream]
// stages a tree beside the target, checks and digests every entry, and
// renames it into place; [Layout.Write] and [Layout.CopyFS] are its fills,
// from [Files] and from an [fs.FS]. By default a published directory
// survives power loss once the write returns. [Layout.Prune] removes
// everything but the directories to keep; [Layout.Reset] empties the root.
// Under [Layout.RecordDigest] each directory carries its [Digest], recorded
// before it is renamed into place; [Layout.Adopt] is the boot that keeps
// the directories that carry one, reading nothing else of them, and
// [Layout.Verify] tells whether one still holds the tree of its digest,
// reading every file again (no size, mtime or inode is trusted), as
// [Layout.VerifyFiles] does against files held in memory;
// [StreamOptions].Existing has a streamed write verify so and keep nothing
// when the content it staged is on disk already. Under [Layout.Link]
// writes publish files read-only and hard-link each one unchanged from a
// directory a [LinkIndex] holds (one this process published or verified)
// instead of writing it: unread only while its stamp, change time included,
// is the one taken when its bytes were known, else read and compared first.
// Every name and entry is checked before it is published ([NameError]);
// every write and removal goes through an [os.Root]; removal never crosses
// into another filesystem mounted under the root ([ErrMountPoint]); and
// Prune and Reset refuse a non-empty root no layout claimed ([ErrNotOwned]).
//
// # Concurrency
//
// Layout values are safe for concurrent use by multiple goroutines and by
// several processes sharing one root: writes, Prune, Reset, IDs and Settle
// may run at once without corrupting one another, the last write of an ID
// to publish wins, and Prune never removes a directory a live write is
// still filling. The coordination is an advisory lock on the root, behind
// an in-process reader/writer lock, so that at most one OS thread per root
// and process waits in the kernel. Removal runs outside the lock, on at
// most four goroutines per process; a removal that hangs costs each call
// that waits for it (its caller, and a Prune or Reset that finds it under
// way) at most [Layout.RemovalDeadline], and blocks no other call.
//
// # Limits
//
// A reader already inside a directory that is then pruned or rewritten
// sees it emptied under it; keep what readers use out of Prune (the keep
// set is what leases are for). Nothing protects a directory from a rewrite
// of its own ID: IDs should be immutable, one per published version.
// Durability relies on fsync reaching stable storage, which network
// filesystems and disks that lie about their caches do not guarantee. The
// name rules do not cover Unicode normalization. Processes sharing a root
// must run the same version of the layout.
//
// # Platform differences
//
//   - Replacement: atomic with renameat2(RENAME_EXCHANGE) on Linux 3.15 or
//     later. Where the filesystem refuses it, and on other systems, a
//     rewrite moves the old directory aside and renames the new one into
//     place: the ID is missing between the two renames, and a crash there
//     leaves it absent until the next Prune that keeps it, which restores
//     the last directory published (see [Layout.Prune]).
//   - Sync: a durable write calls syncfs(2) once on Linux, which also
//     flushes whatever else is dirty on the root's filesystem (see
//     [Layout.PerFileSync]), and fsyncs file by file elsewhere. Windows
//     cannot sync a directory: renames are as durable as NTFS's journal
//     makes them, and a file made read-only fails a durable streamed write.
//   - Ownership: an extended attribute of the root (user.leasekit.dirlife)
//     on Linux and macOS, so that at rest the root holds only ID
//     directories; where the filesystem holds none (some network and FUSE
//     filesystems, tmpfs before Linux 6.6) and elsewhere, the file
//     [MarkerFile] in the root.
//   - Recorded digests: the extended attribute user.leasekit.digest of
//     each ID directory, on Linux and macOS; where the filesystem holds
//     none, and elsewhere, nothing is recorded and Adopt keeps nothing.
//   - Locking: flock(2) on the root's own descriptor on Unix; LockFileEx on
//     the file [LockFile] on Windows. Neither works across machines sharing
//     a network filesystem.
//   - Mounts: Prune and Reset refuse to descend into a directory on another
//     device than the root; on Linux 5.8 and later they also tell a bind
//     mount of the root's own filesystem. On Windows neither is checked.
package dirlife
