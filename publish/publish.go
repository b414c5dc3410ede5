package publish

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"leasekit.dev/dirlife"
)

// Publish makes files the content of key and returns the record it set:
// write a directory of their own, build it, set the record (refusing a
// stale key), then remove every directory that is neither current nor
// leased. Concurrent calls run one at a time; a call waits for its turn
// until ctx ends, and never for a reader. What each case does is the
// [Outcome] it reports to OnPublish; on failure the current record and its
// directory are as they were.
//
// An empty file set ([dirlife.ErrNoFiles]), a name the layout refuses (a
// [*dirlife.NameError]), a key the codec cannot name ([*KeyError]) and a
// key older than the current one ([*StaleError]) are refused before
// anything is written, as is whatever [Options.Check] refuses and every
// Publish before Boot ([ErrNotBooted]). The build step's error is returned
// as it is. Every error goes through [Options.MapError] when it is set. A
// removal that fails after a successful set does not fail the Publish: it
// goes to OnReclaim, Stats and the log, and the reclaim loop retries it.
//
// Publish is the path of [Publisher.PublishFS] for files held in memory,
// each 0o644 in directories 0o755 (under the umask, as [dirlife.Layout.Write]
// writes them), doing what knowing the content before the write allows:
// an identical re-publish is told by a fingerprint and writes nothing, a
// content whose directory is on disk (an earlier content of the key) takes
// that directory again, and the files are written in parallel rather than
// copied one at a time. Its record has the Digest PublishFS gives the same
// tree under the usual umask, 022. Publish keeps no copy of files: the
// caller may reuse them and their buffers as soon as it returns.
func (p *Publisher[K, A, V]) Publish(ctx context.Context, key K, files dirlife.Files, value V) (Record[K, A, V], error) {
	return p.publishContent(ctx, key, content{files: files}, value)
}

// PublishFS makes fsys's tree the content of key, in the order of Publish,
// and returns the record it set. The tree is copied as [dirlife.Layout.CopyFS]
// copies it, a buffer at a time, so memory does not grow with its bytes:
// directories, regular files with their permission bits, and symbolic
// links whose targets stay inside the tree (fsys must implement
// [fs.ReadLinkFS] for those). The record's Digest is the [dirlife.Digest]
// of what was written, the one Publish gives the same tree.
//
// An identical re-publish of the current key (the digest of what it
// copied equals the current record's) discards its copy and reports
// [Unchanged]: the current directory, and the readers inside it, are left
// undisturbed. It costs the copy and its hashing, not a copy kept between
// publishes. Under [Options.Adopt], a copy whose key and digest a
// directory Boot kept claims is discarded too, once that directory is
// read and verified, and the kept directory is served. A new content
// beside a directory of the same key is named after the key and 12
// random hex digits, its digest being unknown until it is written.
//
// ctx ends the call also while a read of fsys blocks (a FIFO, a slow
// fs.FS): the read is abandoned, and nothing is published. [Options.Check]
// is called with nil files before anything is read: rules on the content
// belong to the build step, which sees the written directory. On failure
// the current record and its directory are as they were, and what was
// copied is removed.
func (p *Publisher[K, A, V]) PublishFS(ctx context.Context, key K, fsys fs.FS, value V) (Record[K, A, V], error) {
	return p.publishContent(ctx, key, content{fsys: fsys}, value)
}

// content is what a Publish writes: files held in memory, whose digest is
// known before anything is written, or, when files is nil, fsys's tree,
// whose digest is known once it is copied.
type content struct {
	files dirlife.Files
	fsys  fs.FS
}

// publishContent is Publish and PublishFS: it publishes c and reports the
// outcome.
func (p *Publisher[K, A, V]) publishContent(ctx context.Context, key K, c content, value V) (Record[K, A, V], error) {
	p.made()
	var t Timings
	var reclaims []ReclaimEvent[K]
	var claim claimed
	var w dirlife.Written // the bytes and links of what was written
	rec, outcome, err := p.publish(ctx, key, c, value, &t, &reclaims, &claim, &w)
	if err != nil && p.mapErr != nil {
		err = p.mapErr(err)
	}
	ev := PublishEvent[K]{Key: key, Outcome: outcome, Timings: t, Err: err, Discarded: claim.discarded,
		Bytes: w.Bytes, Wrote: w.Wrote, Linked: w.Linked}
	if err == nil {
		ev.Identity, ev.Dir = rec.Identity(), rec.Dir
	}
	p.finishPublish(ev, reclaims, claim)
	return rec, err
}

// claimed is what a Publish did with the directories Boot kept under
// Adopt for its content.
type claimed struct {
	adopted   bool  // one verified and was claimed, without writing
	failed    int   // how many failed verification and were discarded
	discarded error // why they failed, joined
}

// fail records that a kept directory failed verification with err.
func (c *claimed) fail(err error) {
	c.failed++
	c.discarded = errors.Join(c.discarded, err)
}

func (p *Publisher[K, A, V]) publish(ctx context.Context, key K, c content, value V, t *Timings, reclaims *[]ReclaimEvent[K], claim *claimed, w *dirlife.Written) (rec Record[K, A, V], _ Outcome, _ error) {
	if !p.booted.Load() {
		return rec, Failed, ErrNotBooted
	}
	files, streamed := c.files, c.files == nil
	if p.check != nil {
		if err := p.check(key, files, value); err != nil {
			return rec, Failed, err
		}
	}
	if streamed && c.fsys == nil {
		return rec, Failed, fmt.Errorf("publish: key %v: a nil fs.FS is no tree", key)
	}
	if !streamed && len(files) == 0 {
		return rec, Failed, fmt.Errorf("publish: key %v: %w", key, dirlife.ErrNoFiles)
	}
	if key != key {
		return rec, Failed, &KeyError[K]{Key: key, Name: p.codec.Format(key), Rule: "NaN is not a key: it equals no key, not even itself"}
	}
	if err := p.lock(ctx); err != nil {
		return rec, Failed, err
	}
	defer p.unlock()

	_, cur, held := p.slot.Get()
	if held && key < cur.Key {
		return rec, Stale, &StaleError[K]{Key: key, Current: cur.Key}
	}
	same := held && key == cur.Key && cur.Dir == p.curDir
	var fp fingerprint // stays zero, which no file set has, for a tree
	var digest dirlife.Digest
	if !streamed {
		fp = fingerprintOf(p.seedA, p.seedB, files)
		if same && fp == p.curFP {
			*reclaims = p.reclaimOthers()
			return p.keep(cur, value), Unchanged, nil
		}
		// Refuse what could never be written before anything is written.
		d, err := p.layout.DigestFiles(files)
		if err != nil {
			return rec, Failed, fmt.Errorf("publish: key %v: %w", key, err)
		}
		digest = d
	}
	if err := ctx.Err(); err != nil {
		return rec, Failed, err
	}
	plain, err := p.plainName(key)
	if err != nil {
		return rec, Failed, err
	}

	var (
		id    Identity[K]
		name  string
		wrote bool
	)
	if streamed {
		var current dirlife.Digest
		if same {
			current = cur.Digest
		}
		name, id, wrote, err = p.copyTree(ctx, key, plain, c.fsys, current, t, w, claim)
		if err == nil && name == "" {
			*reclaims = p.reclaimOthers()
			return p.keep(cur, value), Unchanged, nil
		}
	} else {
		id = Identity[K]{Key: key, Digest: digest}
		if same && cur.Identity() == id {
			p.curFP = fp
			*reclaims = p.reclaimOthers()
			return p.keep(cur, value), Unchanged, nil
		}
		// A directory Boot kept under Adopt is claimed by a content known
		// before anything is written; a tree's is claimed once its copy is
		// staged (copyTree).
		if err := p.claim(ctx, id, files, t, claim); err != nil {
			return rec, Failed, err
		}
		name, wrote, err = p.place(id, plain, files, t, w)
	}
	if err != nil {
		*reclaims = p.reclaimLocked()
		return rec, Failed, err
	}
	dir := p.layout.Dir(name)
	start := time.Now()
	art, err := p.build(ctx, dir)
	t.Build = time.Since(start)
	if err != nil {
		if wrote {
			p.log.Debug("publish: build failed; its directory goes", "key", key, "dir", name)
		}
		start = time.Now()
		*reclaims = p.reclaimLocked()
		t.Prune = time.Since(start)
		return rec, p.buildOutcome(ctx, err), err
	}

	start = time.Now()
	rec = Record[K, A, V]{Key: key, Digest: id.Digest, Dir: dir, Artifact: art, Value: value}
	p.slot.Set(key, rec)
	p.curFP, p.curDir = fp, dir
	p.keeping = false // unclaimed kept directories are garbage now
	p.mu.Lock()
	p.dirs[name].superseded = time.Time{}
	if held && cur.Dir != dir {
		if d := p.dirs[filepath.Base(cur.Dir)]; d != nil {
			d.superseded = start
		}
	}
	p.mu.Unlock()
	t.Set = time.Since(start)

	start = time.Now()
	*reclaims = p.pruneAfterSet()
	t.Prune = time.Since(start)
	if held && key == cur.Key {
		return rec, Changed, nil
	}
	return rec, Published, nil
}

// buildOutcome is the outcome of a build that returned err: Failed when
// the error is ctx's own (ctx ended during the build) or [Options.Refused]
// says it is no verdict on the content, else BuildFailed.
func (p *Publisher[K, A, V]) buildOutcome(ctx context.Context, err error) Outcome {
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return Failed
	}
	if p.refused != nil && !p.refused(err) {
		return Failed
	}
	return BuildFailed
}

// keep returns cur carrying value, setting it when the value changed: the
// same files keep their identity and directory.
func (p *Publisher[K, A, V]) keep(cur Record[K, A, V], value V) Record[K, A, V] {
	if cur.Value != value {
		cur.Value = value
		p.slot.Set(cur.Key, cur)
	}
	return cur
}

// reclaimOthers is reclaimLocked for a Publish that keeps the current
// directory: it removes what is neither current nor leased, as every
// Publish does, and costs a look at one map when the current directory is
// the only one known. The caller holds the serialisation.
func (p *Publisher[K, A, V]) reclaimOthers() []ReclaimEvent[K] {
	p.mu.Lock()
	others := len(p.dirs) > 1
	p.mu.Unlock()
	if !others && !p.dirty {
		return nil
	}
	return p.reclaimLocked()
}

// plainName returns the codec's name for key, checked to parse back to key.
func (p *Publisher[K, A, V]) plainName(key K) (string, error) {
	name := p.codec.Format(key)
	if k, ok := p.codec.Parse(name); !ok || k != key {
		return "", &KeyError[K]{Key: key, Name: name, Rule: "the codec does not parse the name back to the key"}
	}
	if _, ok := (dirCodec[K]{key: p.codec}).keyOf(name); !ok {
		return "", &KeyError[K]{Key: key, Name: name, Rule: "not a directory name of the publisher's"}
	}
	return name, nil
}

// claim verifies, when no directory this process wrote or verified holds
// id, the directories Boot kept for id, one at a time in name order, until
// one matches; it compares each with files, id's content
// ([dirlife.Layout.Verify] with files: a read, and no hash). The one that
// matches is claimed (no longer kept, so place serves it), and the other
// kept copies of id are forgotten, garbage for the next removal pass,
// unread. Each that fails is forgotten too, and recorded in claim; when
// none matches, place writes id afresh (over one of them, when it has the
// name place picks). Only ctx's end fails it, leaving the directories not
// yet read kept. The caller holds the serialisation.
func (p *Publisher[K, A, V]) claim(ctx context.Context, id Identity[K], files dirlife.Files, t *Timings, claim *claimed) error {
	names, trusted := p.keptFor(id)
	if trusted || len(names) == 0 {
		return nil
	}
	start := time.Now()
	defer func() { t.Write = time.Since(start) }()
	for _, name := range names {
		err := p.layout.Verify(ctx, name, id.Digest, files)
		if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
			return err
		}
		if p.claimed(id, name, err, claim) {
			break
		}
	}
	return nil
}

// keptFor returns the names of the directories Boot kept for id, sorted,
// and whether a directory this process wrote or verified holds id.
func (p *Publisher[K, A, V]) keptFor(id Identity[K]) (names []string, trusted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n, d := range p.dirs {
		switch {
		case d.id != id:
		case !d.kept:
			return nil, true
		default:
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, false
}

// claimed records the verification of name, a directory Boot kept for id,
// which returned err: a match is claimed, and the other kept copies of id
// are forgotten; a mismatch is forgotten. It reports whether name matched.
// The caller holds the serialisation.
func (p *Publisher[K, A, V]) claimed(id Identity[K], name string, err error, claim *claimed) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		delete(p.dirs, name)
		p.dirty = true
		claim.fail(err)
		return false
	}
	for n, d := range p.dirs {
		if d.kept && d.id == id && n != name {
			delete(p.dirs, n) // unread: never served
			p.dirty = true
		}
	}
	p.dirs[name].kept = false
	claim.adopted = true
	return true
}

// place returns the name of a directory holding id's files: one on disk
// that this process wrote or verified (an earlier content of the current
// key, still leased or not yet removed, or a kept directory claim
// verified), never a kept one not verified, or a new one it writes under a
// name no entry has, counting its bytes in w. wrote reports whether it
// wrote. The caller holds the serialisation.
func (p *Publisher[K, A, V]) place(id Identity[K], plain string, files dirlife.Files, t *Timings, w *dirlife.Written) (name string, wrote bool, err error) {
	keyTaken := false
	for n, d := range p.dirs {
		if d.id == id && !d.kept {
			return n, false, nil
		}
		keyTaken = keyTaken || d.id.Key == id.Key
	}
	name, ok := nameFor(plain, id.Digest, keyTaken, func(n string) bool { return p.dirs[n] != nil })
	if !ok {
		return "", false, fmt.Errorf("publish: key %v: every directory name of its content is taken", id.Key)
	}
	start := time.Now()
	_, err = p.disk.Write(name, files)
	t.Write += time.Since(start) // after a kept directory's verification
	if err != nil {
		// A failed Write leaves nothing under name, but for a publication
		// it could not make durable; either way the next removal pass
		// clears what is left.
		p.dirty = true
		return "", false, err
	}
	for _, data := range files {
		w.Bytes += int64(len(data))
	}
	w.Wrote = w.Bytes
	if p.links != nil {
		n, linked := p.links.linked(name)
		w.Wrote, w.Linked = w.Bytes-linked, n // a linked file is not written
	}
	p.mu.Lock()
	p.dirs[name] = &dirRec[K]{id: id}
	p.mu.Unlock()
	return name, true, nil
}

// copyTree copies fsys's tree as a new directory of key and returns its
// name: the key's plain name when no directory of the key is on disk,
// else the plain name and 12 random hex digits not taken; w reports what
// it wrote. Once the copy is staged and its digest known, a copy whose
// digest is current is discarded (name is ""), and so is one that a
// directory Boot kept for its identity holds: claim's rule, applied by
// the layout while it holds the staged copy, so that it is published
// when no kept copy verifies; name is then the kept directory's, and
// wrote false. The caller holds the serialisation.
func (p *Publisher[K, A, V]) copyTree(ctx context.Context, key K, plain string, fsys fs.FS, current dirlife.Digest, t *Timings, w *dirlife.Written, claim *claimed) (name string, id Identity[K], wrote bool, err error) {
	keyTaken := false
	for _, d := range p.dirs {
		keyTaken = keyTaken || d.id.Key == key
	}
	taken := func(n string) bool { return p.dirs[n] != nil }
	name = plain
	for keyTaken || taken(name) {
		var draw [8]byte
		binary.BigEndian.PutUint64(draw[:], rand.Uint64())
		name, keyTaken = plain+"-"+hex.EncodeToString(draw[:])[:minHex], false
	}
	var adopted string
	existing := func(d dirlife.Digest, verify func(string) error) (bool, error) {
		id := Identity[K]{Key: key, Digest: d}
		names, trusted := p.keptFor(id)
		if trusted {
			return false, nil
		}
		for _, n := range names {
			err := verify(n)
			if cerr := ctx.Err(); err != nil && cerr != nil && errors.Is(err, cerr) {
				return false, err
			}
			if p.claimed(id, n, err, claim) {
				adopted = n
				return true, nil
			}
		}
		return false, nil
	}
	start := time.Now()
	copied, err := p.disk.CopyFS(ctx, name, fsys, dirlife.StreamOptions{Current: current, Existing: existing})
	t.Write += time.Since(start)
	if err != nil {
		// As with a failed Write in place.
		p.dirty = true
		return "", id, false, err
	}
	*w = copied
	id = Identity[K]{Key: key, Digest: copied.Digest}
	switch {
	case adopted != "":
		return adopted, id, false, nil
	case !copied.Published:
		return "", id, false, nil
	}
	p.mu.Lock()
	p.dirs[name] = &dirRec[K]{id: id}
	p.mu.Unlock()
	return name, id, true, nil
}

// finishPublish records ev in the stats, logs it and calls the callbacks.
// It runs after the serialisation is released.
func (p *Publisher[K, A, V]) finishPublish(ev PublishEvent[K], reclaims []ReclaimEvent[K], claim claimed) {
	p.finishReclaims(reclaims)
	p.wakeToSettle(reclaims)
	p.statsMu.Lock()
	if claim.adopted {
		p.stats.Adopted++
	}
	p.stats.Discarded += uint64(claim.failed)
	p.stats.BytesPublished += uint64(ev.Bytes)
	p.stats.BytesWritten += uint64(ev.Wrote)
	p.stats.FilesLinked += uint64(ev.Linked)
	switch ev.Outcome {
	case Published:
		p.stats.Publishes++
	case Changed:
		p.stats.Publishes++
		p.stats.Changes++
	case Unchanged:
		p.stats.Unchanged++
	case BuildFailed:
		p.stats.FailedBuilds++
	}
	if ev.Outcome != Unchanged {
		p.stats.LastPublish = ev.Timings
	}
	switch {
	case ev.Err != nil:
		p.stats.LastError = ev.Err
	case !failed(reclaims):
		// A publish that succeeded does not hide a removal that still
		// fails: the reclaim loop is retrying it.
		p.stats.LastError = p.reclaimErr
	}
	p.statsMu.Unlock()

	if claim.discarded != nil {
		p.log.Warn("publish: a kept directory failed verification; written afresh", "key", ev.Key, "err", claim.discarded)
	}
	switch {
	case ev.Outcome == Stale:
		// Expected, not a fault: a caller behind another (an older
		// reconcile, a lagging cache) was refused, and nothing changed.
		// Said as the caller's error says it.
		p.log.Info(ev.Err.Error(), "key", ev.Key, "outcome", ev.Outcome.String())
	case ev.Err != nil:
		p.log.Error("publish: publish", "key", ev.Key, "outcome", ev.Outcome.String(), "err", ev.Err)
	case ev.Outcome == Unchanged:
		if p.log.Enabled(context.Background(), slog.LevelDebug) {
			p.log.Debug("publish: publish", "key", ev.Key, "outcome", ev.Outcome.String())
		}
	default:
		p.log.Info("publish: publish", "key", ev.Key, "outcome", ev.Outcome.String(), "identity", ev.Identity.String(), "dir", ev.Dir,
			"write", ev.Timings.Write, "build", ev.Timings.Build, "set", ev.Timings.Set, "prune", ev.Timings.Prune)
	}
	if p.onPublish != nil {
		p.onPublish(ev)
	}
}
