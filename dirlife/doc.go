// Package dirlife keeps one directory per ID under a root it owns: whoever
// looks up an ID's path finds the directory absent or complete, also after
// the writer is killed at any instant, and nothing the layout does leads
// outside its root.
//
// A [Layout] names its root and a [Codec] that turns IDs into directory
// names. [Layout.WriteStream] stages a tree beside the target, checks and
// digests every entry ([NameError], [Digest]), makes it durable (unless
// [Layout.NoSync]) and renames it into place; [Layout.Write] and
// [Layout.CopyFS] are its fills, from [Files] and from an [fs.FS]. [Layout.Prune] removes everything but the
// directories to keep, [Layout.Reset] empties the root at boot, and
// [Layout.Settle] waits for removals left running. Every write and removal
// goes through an [os.Root]; removal never enters another filesystem
// mounted under the root ([ErrMountPoint]); a non-empty root no layout
// claimed is refused ([ErrNotOwned]). Under [Layout.RecordDigest] each
// directory carries its digest, which [Layout.Recorded] lists at boot,
// reading nothing else, and [Layout.Verify] checks by reading every file
// again (no size, mtime or inode is trusted), against the digest or
// against files held in memory; [StreamOptions].Existing has a streamed
// write keep nothing when the content it staged verifies on disk already.
// Writes under [Layout.Link] hard-link unchanged files a [Linker] offers.
//
// Layout values are safe for concurrent use by multiple goroutines and by
// several processes sharing one root: the last write of an ID to publish
// wins, and Prune never removes a directory a live write is filling. The
// coordination is an advisory lock on the root behind an in-process
// reader/writer lock, so at most one OS thread per root and process waits
// in the kernel. Removal runs outside the lock on at most four goroutines
// per process; one that hangs costs each call that waits for it (its
// caller, and a Prune or Reset that finds it under way) at most
// [Layout.RemovalDeadline], and blocks no other call.
//
// # Limits
//
// A reader inside a directory that is pruned or rewritten sees it emptied
// under it: keep what readers use out of Prune (what leases are for), and
// never rewrite an ID (one ID per published version). Durability relies on
// fsync reaching stable storage, which network filesystems and disks that
// lie about their caches do not give. The name rules do not cover Unicode
// normalization. Processes sharing a root must run the same version of the
// layout.
//
// Between systems:
//   - Replacement is atomic with renameat2(RENAME_EXCHANGE) on Linux 3.15 or
//     later. Elsewhere, or where the filesystem refuses it, the old directory
//     is moved aside first: the ID is missing between the two renames, and a
//     crash there leaves it absent until a Prune that keeps it restores it.
//   - A durable write calls syncfs(2) once on Linux, flushing whatever else
//     is dirty on the root's filesystem ([Layout.PerFileSync]), and fsyncs
//     file by file elsewhere. Windows cannot sync a directory: renames are
//     as durable as NTFS's journal makes them, and a file made read-only
//     fails a durable streamed write.
//   - Ownership and recorded digests are extended attributes
//     (user.leasekit.dirlife on the root, user.leasekit.digest on each ID
//     directory) on Linux and macOS. Where the filesystem holds none (some
//     network and FUSE filesystems, tmpfs before Linux 6.6), and elsewhere,
//     the file [MarkerFile] in the root records ownership and no digest is
//     recorded.
//   - The lock is flock(2) on the root's descriptor on Unix, LockFileEx on
//     the file [LockFile] on Windows; neither works across machines.
//   - Prune and Reset do not descend into a directory on another device than
//     the root, and on Linux 5.8 or later into a bind mount of the root's own
//     filesystem; on Windows neither is checked.
package dirlife
