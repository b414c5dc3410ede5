// Package publish is the safe order for any controller that keeps one
// directory per generation of some input (a compiled bundle, an unpacked
// image, rendered files) and readers that use the current one for a
// while: a generic [Publisher] of immutable directories under one Root,
// with a build step of the caller's and no knowledge of what the files
// mean.
//
// [Publisher.Publish] writes a content's directory, builds it with the
// caller's [BuildFunc], sets the record in a [slot.Slot] (refusing a stale
// key) and removes every directory that is neither current nor leased.
// Directories never change once published: each content has an
// [Identity] (its key and the [dirlife.Digest] of its files) and a directory
// of its own, named gen-<n> (the key codec's name) or, when a directory of
// that key is on disk already, gen-<n>-<12 hex digits of the digest>,
// lengthened while the name is taken. A changed content at the current key
// is written beside the current one and swapped in atomically, so no
// lease is refused while a record is held and no Publish waits for a
// reader. An identical re-publish is recognised by a keyed fingerprint of
// the files and writes nothing; the publisher keeps no copy of them.
//
// [Publisher.PublishFS] publishes a tree read from an [io/fs.FS] (an
// unpacked image, a tree on disk) in the same order, copied a buffer at a
// time, so that memory does not grow with the artifact. Its record's
// digest is that of what was written, so the same content has one
// [Identity] whichever way it arrived; an identical re-publish is told by
// that digest once the copy is staged, and the copy is discarded.
// [Publisher.Boot] empties Root before any reader exists (under
// [Options.Adopt] it keeps the directories an earlier process wrote, each
// carrying its digest in an extended attribute; the Publish of their
// content reads one again, every byte, and serves it only if it matches,
// discarding a PublishFS's staged copy then), and
// [Publisher.Run] removes a replaced directory as soon as its last lease
// is released; to wait until it is gone, call [Publisher.Reclaim], then
// [Publisher.Settle], after the release. Under [Options.LinkUnchanged] a file unchanged from a
// directory the Publisher wrote or verified is hard-linked, not written
// (read and compared first unless its stamp, change time included, is the
// one taken when its bytes were known), and every file is published
// read-only.
//
// The promise: a directory a reader leased (from the [Publisher.Slot]) is
// never removed and never changes while leased, and the slot never names
// a missing or partial directory.
//
// Concurrency: a Publisher is safe for concurrent use by multiple
// goroutines. It serialises Boot, Publish, Forget and every removal;
// leases take no lock of its own; OnPublish and OnReclaim are called
// under no lock. The reclaim loop is Run (or Start), on the caller's
// goroutine; the only goroutine the Publisher starts is Run's wait for
// the removals left to the background, which Run ends before it returns.
// The trees it removes go on the layout's removal goroutines
// ([dirlife.Layout.DeferRemoval]), off the serialisation.
//
// Limits: a lease protects a directory from the Publisher, not from
// another writer of Root or from a reader that writes into it (under
// LinkUnchanged, a write, chmod or truncation of a file changes every
// directory that shares it); Root belongs to one Publisher. A process
// that dies takes its leases with it: the next one boots, which empties
// Root (under Adopt, keeps what carries a digest, to be verified before
// it is served), before any reader exists. Adopt's digest detects
// accidents, not tampering; a directory this process wrote or verified is
// not read again. The fingerprint that recognises an identical re-publish
// is 128 bits of [hash/maphash] with seeds secret to the Publisher; a
// change it missed would need a collision of both.
package publish
