package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/runtime/vfs"
	"github.com/monty-go/monty/session/store"
)

// The live state of a session: its interpreter, built from the stored
// state (load, restore, a fresh start, rollback), read back for a save
// (snapshot), and the claims on its paused run stored beside it. With
// session.go, the only file of Session's methods.

// load fetches and restores the stored state, or starts empty.
func (s *Session) load(ctx context.Context) error {
	s.noticed = false
	if s.opts.Ephemeral {
		return s.fresh(ctx)
	}
	obj, err := s.state.get(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return s.fresh(ctx)
	}
	if errors.Is(err, store.ErrUnreadable) {
		// Damage to this entry, not an outage of the store.
		return s.salvage(ctx, err)
	}
	if err != nil {
		return err
	}
	s.restore.Found = true
	b, err := s.state.decode(obj.Data)
	if err == nil {
		err = s.restoreBlob(ctx, b)
	}
	if errors.Is(err, runtime.ErrMemoryLimit) {
		// The state is intact but too large for this session's limit: it
		// stays stored as it is, for a caller with a larger limit.
		return fmt.Errorf("session %s: the stored state does not fit the memory limit, and is kept unchanged: %w", s.id, err)
	}
	if errors.Is(err, vfs.ErrNoSpace) {
		// Files written under larger limits: kept for a caller with those.
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	if errors.Is(err, ErrCorrupt) {
		return s.quarantine(ctx, obj.Data, err, "")
	}
	if err != nil {
		// Cancelled, no interpreter, a dead one: the blob is not to blame.
		return err
	}
	s.state.adopt(obj.Info, b)
	s.tc = b.TypeCheck
	return nil
}

// reload replaces the live state with what the store holds now.
func (s *Session) reload(ctx context.Context) error {
	s.restore = Restore{}
	return s.load(ctx)
}

// rollback puts the interpreter back to the last saved state. It runs to
// completion even when ctx is cancelled: a cancelled call is exactly when
// it is needed.
func (s *Session) rollback(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	saved := s.state.saved
	if saved == nil {
		s.tc = nil
		return s.freshInterpreter(ctx)
	}
	if s.repl != nil {
		s.repl.Close()
		s.repl = nil
	}
	if s.it == nil || s.it.Dead() != nil || s.it.Outdated() {
		if err := s.newInterpreter(ctx); err != nil {
			return err
		}
	}
	s.restore = Restore{Found: true}
	s.tc = saved.TypeCheck
	return s.restoreBlob(ctx, saved)
}

// salvage handles an entry the store reports unreadable (unreadErr): its
// bytes are kept aside through the store's store.Salvager, then the
// session fails or starts fresh as for a blob that does not load. A store
// that cannot hand the bytes over leaves the session failing: nothing is
// replaced that was not kept.
func (s *Session) salvage(ctx context.Context, unreadErr error) error {
	s.restore.Found = true
	cause := fmt.Errorf("%w: the store cannot read it: %w", ErrCorrupt, unreadErr)
	data, token, err := s.state.salvage(ctx)
	if errors.Is(err, store.ErrNotFound) {
		// Removed meanwhile: nothing is stored.
		s.restore = Restore{}
		return s.fresh(ctx)
	}
	if err != nil {
		return &CorruptStateError{ID: s.id, Err: cause, KeepErr: err}
	}
	return s.quarantine(ctx, data, cause, token)
}

// quarantine keeps an unloadable blob aside, then fails or starts fresh.
// replace is the version a fresh start's first save replaces the original
// under ("": the stored version, as Stat reports it).
func (s *Session) quarantine(ctx context.Context, data []byte, cause error, replace string) error {
	qid, err := s.state.keepAside(ctx, data)
	if err != nil {
		return &CorruptStateError{ID: s.id, Err: cause, KeepErr: err}
	}
	if !s.opts.FreshOnCorrupt {
		return &CorruptStateError{ID: s.id, QuarantinedAs: qid, Err: cause}
	}
	s.restore.QuarantinedAs = qid
	s.restore.Reason = cause.Error()
	s.restore.Err = cause
	// Starting empty: later saves replace the original, whose copy is kept.
	s.state.startOver(ctx, replace)
	return s.freshInterpreter(ctx)
}

// restoreBlob rebuilds the interpreter state and the files from a decoded
// blob.
func (s *Session) restoreBlob(ctx context.Context, b *blob) error {
	s.runs.paused = nil
	s.state.lineage = nil
	if err := s.state.restoreFiles(b); err != nil {
		return err
	}
	if err := s.newInterpreter(ctx); err != nil {
		return err
	}
	if d := b.Driver; d != nil && d.Feed {
		return fmt.Errorf("%w: session %s is paused in a %s feed, waiting on that surface's client; continue it over %s",
			ErrDriverFeed, s.id, d.Name, d.Name)
	}
	if b.Run != nil && (b.JSONOnly || s.opts.JSONOnly || b.MontyVersion != s.eng.MontyVersion()) {
		// Rebuilding from the JSON view would drop the run and let the
		// next call overwrite it: refuse, leaving the state stored.
		return fmt.Errorf("%w: run %s, paused by Monty %s, cannot be continued here (Monty %s, JSON-only %t); resume it where it was paused",
			ErrRunUnloadable, b.Run.ID, b.MontyVersion, s.eng.MontyVersion(), s.opts.JSONOnly)
	}
	if !b.JSONOnly && !s.opts.JSONOnly {
		if b.MontyVersion == s.eng.MontyVersion() {
			dump := b.Dump
			if b.Parts != nil {
				var err error
				if dump, err = b.Parts.join(s.eng, s.opts.Limits.MaxMemory); err != nil {
					return err
				}
			}
			repl, paused, err := s.it.LoadREPL(ctx, dump)
			if err == nil {
				s.repl = repl
				s.state.lineage = b.Parts
				return s.runs.adopt(b, paused)
			}
			if !errors.Is(err, runtime.ErrInvalidDump) {
				return blobFault(ctx, err, "the dump does not load")
			}
			if b.Run != nil {
				return fmt.Errorf("%w: run %s: its dump does not load here: %v", ErrRunUnloadable, b.Run.ID, err)
			}
			s.restore.Reason = "the dump could not be loaded: " + err.Error()
		} else {
			s.restore.Reason = fmt.Sprintf("the dump was written by Monty %s and this is Monty %s", b.MontyVersion, s.eng.MontyVersion())
		}
		s.restore.FromJSON = true
	}
	view, err := parseView(b.JSON)
	if err != nil {
		return err
	}
	if s.restore.FromJSON {
		for _, n := range b.Names {
			if _, ok := view.Get(object.Str(n)); !ok {
				s.restore.Lost = append(s.restore.Lost, n)
			}
		}
	}
	return blobFault(ctx, s.injectJSON(ctx, view), "the JSON view does not load")
}

// blobFault classifies an error met while restoring a decoded blob: a
// failure of the blob itself (ErrCorrupt, so the blob is kept aside) unless
// it is the caller's cancellation, a dead interpreter or the memory limit,
// which say nothing about the blob.
func blobFault(ctx context.Context, err error, what string) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, runtime.ErrCancelled) || errors.Is(err, runtime.ErrDead) ||
		errors.Is(err, runtime.ErrMemoryLimit) {
		// Not the blob's fault: a state too large for this caller's
		// memory limit is kept as it is.
		return err
	}
	return corrupt("%s: %v", what, err)
}

// fresh starts the session empty, as when nothing is stored.
func (s *Session) fresh(ctx context.Context) error {
	s.state.forget()
	s.tc = nil
	return s.freshInterpreter(ctx)
}

// freshInterpreter gives the session a new interpreter with an empty REPL
// and an empty /work.
func (s *Session) freshInterpreter(ctx context.Context) error {
	s.runs.paused = nil
	s.state.lineage = nil
	if err := s.state.restoreFiles(nil); err != nil {
		return err
	}
	if err := s.newInterpreter(ctx); err != nil {
		return err
	}
	repl, err := s.it.NewREPL(ctx, s.replOptions()...)
	s.repl = repl
	return err
}

// replOptions start a new REPL in /work when the session has files.
func (s *Session) replOptions() []runtime.CompileOption {
	if s.state.files == nil {
		return nil
	}
	return []runtime.CompileOption{runtime.WithCwd(FilesMount)}
}

// newInterpreter replaces the interpreter (from the pool, when there is
// one), leaving the session without a REPL.
func (s *Session) newInterpreter(ctx context.Context) error {
	if s.it != nil {
		_ = s.it.Close(ctx)
	}
	var it *runtime.Interpreter
	var err error
	if s.opts.Pool != nil {
		it, err = s.opts.Pool.Get(ctx)
	} else {
		it, err = s.eng.NewInterpreter(ctx)
	}
	if err != nil {
		return err
	}
	s.it, s.repl, s.view = it, nil, viewer{}
	return nil
}

// injectJSON makes a fresh REPL whose globals are the JSON view's values.
func (s *Session) injectJSON(ctx context.Context, view object.Dict) error {
	if s.repl != nil {
		s.repl.Close()
	}
	repl, err := s.it.NewREPL(ctx, s.replOptions()...)
	if err != nil {
		return err
	}
	s.repl, s.view = repl, viewer{}
	if len(view) == 0 {
		return nil
	}
	inputs := make([]runtime.Input, 0, len(view))
	for _, p := range view {
		inputs = append(inputs, runtime.Input{Name: string(p.Key.(object.Str)), Value: p.Value})
	}
	if _, err = repl.Run(ctx, "None", inputs...); err != nil {
		return err
	}
	// Nothing ran that could reach the memory limit: measure, as loading
	// a dump does.
	if limit := s.opts.Limits.MaxMemory; limit > 0 {
		used, err := s.it.MemoryUsage(ctx)
		if err != nil {
			return err
		}
		if used > limit {
			return &runtime.StateLimitError{Need: used, Limit: limit}
		}
	}
	return nil
}

// parseView reads a stored JSON view: ErrCorrupt unless it is an object
// with string keys.
func parseView(raw json.RawMessage) (object.Dict, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := object.FromJSON(raw)
	if err != nil {
		return nil, corrupt("JSON view: %v", err)
	}
	d, ok := v.(object.Dict)
	if !ok {
		return nil, corrupt("JSON view is not an object")
	}
	for _, p := range d {
		if _, ok := p.Key.(object.Str); !ok {
			return nil, corrupt("JSON view has a non-string key")
		}
	}
	return d, nil
}

// shutdown closes the interpreter.
func (s *Session) shutdown() {
	if s.it != nil {
		_ = s.it.Close(context.Background())
		s.it, s.repl = nil, nil
	}
}

// snapshotUnlessPaused is snapshot, except that a paused run cannot run
// the view's code: the stored view and names stay those of the last
// completed call.
func (s *Session) snapshotUnlessPaused(ctx context.Context, marks []runtime.GlobalMark) (*globalsView, error) {
	if s.runs.paused == nil {
		return s.snapshot(ctx, marks)
	}
	if saved := s.state.saved; saved != nil {
		return &globalsView{names: saved.Names, json: saved.JSON}, nil
	}
	return &globalsView{names: []string{}, json: []byte("{}")}, nil
}

// overBudget reports an error of the view's own memory or size budget.
func overBudget(err error) bool {
	return errors.Is(err, runtime.ErrMemoryLimit) || errors.Is(err, runtime.ErrResultLimit)
}

// strs keeps the strings of a list.
func strs(list object.List) []string {
	out := make([]string, 0, len(list))
	for _, n := range list {
		if name, ok := n.(object.Str); ok {
			out = append(out, string(name))
		}
	}
	return out
}

// putRun stores the saved state with rec as its paused run (a claim, or
// the run listed again), under the same compare-and-set as every save,
// with decisions added; the live run becomes rec.
func (s *Session) putRun(ctx context.Context, rec *pausedRun, decisions []Decision) error {
	saved := s.state.saved
	if saved == nil || saved.Run == nil {
		return fmt.Errorf("%w: session %s: the paused run is not stored", ErrRunNotPaused, s.id)
	}
	b := *saved
	b.Run, b.Decisions = rec, withDecisions(saved.Decisions, decisions)
	if _, err := s.state.put(ctx, &b, filesMark{gen: s.state.filesGen, cache: s.state.filesCache}); err != nil {
		return err
	}
	s.runs.paused.rec = rec
	return nil
}

// claim stores run claimed by this resume for the calls o.Claim (ids),
// and returns the claim's token. A resume that got there first (the store
// moved) refuses it with ErrRunClaimed.
func (s *Session) claim(ctx context.Context, run *activeRun, ids []uint32, o ResumeOptions) (string, error) {
	lease := o.Lease
	if lease <= 0 {
		lease = DefaultClaimLease
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	rec := *run.rec
	rec.Claim = &runClaim{Token: newClaimToken(), Who: o.Who, At: now, Until: now.Add(lease), Calls: ids}
	if o.Name != nil {
		p := run.rec.public(s.id)
		for _, id := range ids {
			name := ""
			for _, c := range p.Calls {
				if c.ID == strconv.FormatUint(uint64(id), 10) {
					name = o.Name(c)
				}
			}
			rec.Claim.Names = append(rec.Claim.Names, name)
		}
	}
	err := s.putRun(ctx, &rec, nil)
	if isConflict(err) {
		_ = s.reload(ctx)
		return "", fmt.Errorf("%w: session %s, run %s: another resume claimed or resumed it at the same moment, and makes its calls", ErrRunClaimed, s.id, run.rec.ID)
	}
	if err != nil {
		return "", err
	}
	return rec.Claim.Token, nil
}

// relist lists the claimed paused run again (relisted), recording its
// claimed calls as may have run, and returns the new pause. It is what a
// resume does on finding a claim whose holder died, and what a claiming
// resume does when it fails after its claim.
func (s *Session) relist(ctx context.Context) (*Paused, error) {
	rec := s.runs.paused.rec
	next := rec.relisted()
	if err := s.putRun(ctx, next, rec.uncertainDecisions(s.id, time.Now().UTC())); err != nil {
		if isConflict(err) {
			_ = s.reload(ctx)
			return nil, fmt.Errorf("%w: session %s, run %s: another resume got there first", ErrRunClaimed, s.id, rec.ID)
		}
		return nil, err
	}
	return next.public(s.id), nil
}

// checkClaim lets this resume go on with run, unless another resume's
// claim holds (ErrRunClaimed) or lapsed (the run is listed again: the
// new pause is returned).
func (s *Session) checkClaim(ctx context.Context, run *activeRun) (*Paused, error) {
	c := run.rec.Claim
	switch {
	case c == nil:
		return nil, nil
	case time.Now().Before(c.Until):
		return nil, fmt.Errorf("%w: session %s, run %s: claimed by %s at %s to make its approved calls, until %s; its outcome is stored when it is done",
			ErrRunClaimed, s.id, run.rec.ID, c.Who, c.At.Format(time.RFC3339), c.Until.Format(time.RFC3339))
	}
	return s.relist(ctx)
}

// snapshot computes the names and JSON view of the public globals of the
// session's REPL (marks: what viewer.changes read, nil to read them).
func (s *Session) snapshot(ctx context.Context, marks []runtime.GlobalMark) (*globalsView, error) {
	return s.view.snapshot(ctx, viewTarget{s.it, s.repl, s.opts.Limits}, s.opts.maxViewSize(), marks)
}
