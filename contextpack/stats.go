package contextpack

import (
	"errors"
	"sync/atomic"
)

// Stats reports the store's occupancy.
type Stats struct {
	Entries      int
	Repositories int
	Bytes        int64
	CapBytes     int64

	// Counts since the Builder was made (Builder.Stats fills them).
	// DigestHits and DigestMisses: files sent as a digest alone (edits
	// included) whose content the store held, or did not (the client
	// resends it).
	DigestHits, DigestMisses uint64
	// SnapshotHits and SnapshotMisses: requests built on a base snapshot
	// held, or not held.
	SnapshotHits, SnapshotMisses uint64
	// PromptMemoHits: prompts reused from the memo of prompts built for
	// the same inputs; PromptsBuilt: prompts assembled.
	PromptMemoHits, PromptsBuilt uint64
}

// counts are the Builder's running totals behind Stats.
type counts struct {
	digestHits, digestMisses     atomic.Uint64
	snapshotHits, snapshotMisses atomic.Uint64
	memoHits, built              atomic.Uint64
}

// record counts one build: files sent as digests (lookups), whether it
// named a base, and how it ended.
func (c *counts) record(lookups int, base bool, memo bool, err error) {
	var se *UnknownSnapshotError
	var me *MissingContentError
	switch {
	case errors.As(err, &se):
		c.snapshotMisses.Add(1)
		return
	case errors.As(err, &me):
		c.digestMisses.Add(uint64(len(me.Paths)))
		c.digestHits.Add(uint64(max(lookups-len(me.Paths), 0)))
	case err != nil:
		return
	default:
		c.digestHits.Add(uint64(lookups))
		if memo {
			c.memoHits.Add(1)
		} else {
			c.built.Add(1)
		}
	}
	if base {
		c.snapshotHits.Add(1)
	}
}

// Stats reports the cache's occupancy and how often requests found what
// they referred to (digests, snapshots) and prompts in the memo.
func (b *Builder) Stats() Stats {
	s := b.store.Stats()
	c := &b.counts
	return Stats{Entries: s.Entries, Repositories: s.Repositories, Bytes: s.Bytes, CapBytes: s.CapBytes,
		DigestHits: c.digestHits.Load(), DigestMisses: c.digestMisses.Load(),
		SnapshotHits: c.snapshotHits.Load(), SnapshotMisses: c.snapshotMisses.Load(),
		PromptMemoHits: c.memoHits.Load(), PromptsBuilt: c.built.Load()}
}
