package tui

import (
	"time"

	"github.com/locktui/locktui/audit"
	"github.com/locktui/locktui/operator"
	"github.com/locktui/locktui/tui/store"
)

// Messages of the root model. Each one carries the result of a tea.Cmd back into Update; the
// watcher's source.Update is one too.
type (
	// viewMsg is a new View from the hub.
	viewMsg struct{ view *store.View }
	// tickMsg advances the countdowns.
	tickMsg struct{}
	// lookupMsg is the result of reading the key an exact filter names; gen drops the reads
	// of a filter typed over since.
	lookupMsg struct {
		gen   int
		found bool
		err   error
	}
	// releaseDoneMsg is the result of a force-release.
	releaseDoneMsg struct {
		key, owner string
		released   bool
		// told is true when the holder, a live lease, was told first (at toldAt); the key is
		// freed when it releases it, at the latest when ttl has passed (freedMsg follows).
		told   bool
		toldAt time.Time
		ttl    time.Duration
		result audit.Released // what the release did, for the freedMsg that follows
		// nowHeld is true when the key is still held after a refused release, by nowOwner
		// (which may be "": the empty owner is an owner like any other; when it is owner, the
		// hold changed since the dialog opened: taken again or re-entered under that owner, or
		// renewed by a client that writes no holder record).
		nowHeld  bool
		nowOwner string
		err      error
		auditErr error
	}
	// freedMsg says when a key whose holder was told first was freed (zero: the wait ended).
	freedMsg struct {
		key             string
		toldAt, freedAt time.Time
		auditErr        error
	}
	// releaseAllDoneMsg is the result of releasing every lock of an owner.
	releaseAllDoneMsg struct {
		owner    string
		count    int
		err      error
		auditErr error
		bulk     *bulkRelease // the release that ended
	}
)

// releaseReq and releaseAllReq are the payloads of the confirmation dialog.
type (
	releaseReq struct { // the hold the dialog showed, and how to release it
		seen operator.Lock
		mode operator.ReleaseMode
	}

	releaseAllReq struct {
		owner string
		count int
	}
)
