package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session/store"
)

// Driver is what a session keeps of the surface that drove it last, when
// that surface runs the interpreter itself (a Driven; format version 7).
// The HTTP API and MCP carry it unchanged through their own calls, so
// that the surface finds its configuration again.
type Driver struct {
	// Name names the surface ("monty.v1").
	Name string `json:"name"`
	// State is the surface's own state of the session (for monty.v1, the
	// worker's configuration and clocks), opaque to this package.
	State []byte `json:"state,omitempty"`
	// Feed is set while the dump holds a feed the surface paused (waiting
	// on its client): only that surface can continue the session then.
	Feed bool `json:"feed,omitempty"`
}

// ErrDriverFeed matches the error of a session that another surface
// stored paused in a feed (Driver.Feed): it is continued there, not here.
var ErrDriverFeed = errors.New("session: paused in a feed of another surface")

// Driven is a session whose interpreter another surface runs: the monty.v1
// server's worker owns the REPL, and a Driven reads the session's stored
// state for it and saves the REPL back, in the format, and under the
// signing, compare-and-set and corrupt-state policy, of every session. So
// the HTTP API and MCP continue what monty.v1 started under the same id,
// and the other way round. A Driven is not safe for concurrent use.
type Driven struct {
	opts  Options
	state *storedState
	view  viewer
	// bound is the REPL that the stored state's parts (state.lineage) are
	// the dump of: a save of another REPL stores its dump whole.
	bound *runtime.REPL
	// decided are the decisions the next save adds (Record).
	decided []Decision
	// stable is DrivenREPL.Stable as last saved (nil: not saved since
	// loaded), for telling a turn that changed nothing.
	stable []byte
}

// DrivenREPL is the driver's REPL a Driven saves.
type DrivenREPL struct {
	// Interpreter runs REPL.
	Interpreter *runtime.Interpreter
	REPL        *runtime.REPL
	// Feed is the feed paused in REPL, nil when it is idle.
	Feed *runtime.Execution
	// Limits are the limits to leave Interpreter with after the save
	// computed the JSON view of REPL's globals (in REPL, under the default
	// limits and a memory budget of its own).
	Limits runtime.Limits
	// Stable is the part of the driver's state (Driver.State) that a turn
	// which changed nothing leaves as it is: all of it but what moves at
	// every turn, such as clocks. When it, the REPL and everything else
	// stored are as last saved, Save stores nothing (a read costs no
	// write); nil always stores.
	Stable []byte
}

// NewDriven is a new session id for a driver: nothing is read, and its
// first Save stores it only if nothing is stored under id (store.ErrConflict
// otherwise). Of Options it uses what OpenDriven does.
func NewDriven(ctx context.Context, id string, opts Options) (*Driven, error) {
	return openDriven(ctx, id, opts, false, false)
}

// OpenDriven reads the state stored under id for a driver; a new session
// when none is. Of Options it uses the Store, the keys, the size caps,
// compression, Engine (to join a dump stored in parts) and Telemetry.
// State that does not load is kept aside and reported as a
// *CorruptStateError naming the copy, whatever Options.FreshOnCorrupt says:
// the driver decides. A session paused at client tool calls (Session.Paused)
// or kept as a JSON view only is refused with ErrRunPaused or
// ErrRunUnloadable: a driver continues only what it can run.
func OpenDriven(ctx context.Context, id string, opts Options) (*Driven, error) {
	return openDriven(ctx, id, opts, true, false)
}

// openDriven is OpenDriven (NewDriven when not read); anyRun takes a
// state with any paused run.
func openDriven(ctx context.Context, id string, opts Options, read, anyRun bool) (*Driven, error) {
	eng, err := opts.check(ctx, id)
	if err != nil {
		return nil, err
	}
	opts.Engine, opts.Files = eng, nil
	opts.Store = opts.Telemetry.Or().Store(opts.Store)
	d := &Driven{opts: opts}
	d.state = newStoredState(id, &d.opts, eng)
	if !read {
		return d, nil
	}
	obj, err := d.state.get(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return d, nil
	case errors.Is(err, store.ErrUnreadable):
		data, _, serr := d.state.salvage(ctx)
		if errors.Is(serr, store.ErrNotFound) {
			return d, nil
		}
		cause := fmt.Errorf("%w: the store cannot read it: %w", ErrCorrupt, err)
		if serr != nil {
			return nil, &CorruptStateError{ID: id, Err: cause, KeepErr: serr}
		}
		return nil, d.keepAside(ctx, data, cause)
	case err != nil:
		return nil, err
	}
	b, err := d.state.decode(obj.Data)
	if errors.Is(err, ErrCorrupt) {
		return nil, d.keepAside(ctx, obj.Data, err)
	}
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	switch {
	case anyRun:
	case b.Run != nil && b.Run.Driver != "":
		// A driver's approval whose wait ended with its holder (the
		// process stopped): the feed waits on it again.
	case b.Run != nil:
		return nil, fmt.Errorf("%w: session %s, run %s is paused at client tool calls; resume it with the surface that paused it (POST /runs/%s/resume)", ErrRunPaused, id, b.Run.ID, b.Run.ID)
	case b.JSONOnly:
		return nil, fmt.Errorf("%w: session %s keeps only the JSON view of its globals, not an interpreter's state to continue", ErrRunUnloadable, id)
	case b.MontyVersion != eng.MontyVersion():
		return nil, fmt.Errorf("%w: session %s was stored by Monty %s and this is Monty %s; continue it through the HTTP API, which rebuilds it from its JSON view", ErrRunUnloadable, id, b.MontyVersion, eng.MontyVersion())
	}
	d.state.adopt(obj.Info, b)
	return d, nil
}

// keepAside stores data, the entry that did not load, aside and returns
// the *CorruptStateError naming the copy.
func (d *Driven) keepAside(ctx context.Context, data []byte, cause error) error {
	qid, err := d.state.keepAside(ctx, data)
	if err != nil {
		return &CorruptStateError{ID: d.state.id, Err: cause, KeepErr: err}
	}
	return &CorruptStateError{ID: d.state.id, QuarantinedAs: qid, Err: cause}
}

// ID is the session id.
func (d *Driven) ID() string { return d.state.id }

// Found reports whether state is stored under the id (as loaded or last
// saved).
func (d *Driven) Found() bool { return d.state.saved != nil }

// Driver returns the stored Driver section (nil: none, as for a session
// the HTTP API made).
func (d *Driven) Driver() *Driver {
	if d.state.saved == nil {
		return nil
	}
	return d.state.saved.Driver
}

// Dump returns the stored REPL dump, whole (nil when nothing is stored).
// A driver that loads it into a REPL passes that REPL to Bind.
func (d *Driven) Dump() ([]byte, error) {
	switch b := d.state.saved; {
	case b == nil:
		return nil, nil
	case b.Parts == nil:
		return b.Dump, nil
	default:
		return b.Parts.join(d.opts.Engine, d.opts.Limits.MaxMemory)
	}
}

// Bind says that repl was loaded from Dump, so that the next Save of it
// stores only what it added since.
func (d *Driven) Bind(repl *runtime.REPL) {
	d.bound = repl
	if b := d.state.saved; b != nil {
		d.state.lineage = b.Parts
	}
}

// Save stores r as the session's state with drv, under compare-and-set on
// the version last loaded or saved: an error matching store.ErrConflict
// when another writer stored the session since (nothing is stored), and
// ErrStateTooLarge over Options.MaxStateSize. An idle REPL is stored with
// its JSON view, computed again, and in parts (what it added since the
// last save); a paused feed is stored whole, with the view of the last
// save, and drv.Feed set. The type check context, the decisions and the
// files of the stored state are kept.
func (d *Driven) Save(ctx context.Context, r DrivenREPL, drv Driver) error {
	st := d.state
	if r.REPL != d.bound {
		st.lineage, d.view, d.bound = nil, viewer{}, r.REPL
	}
	var marks []runtime.GlobalMark
	rebound := false
	if r.Feed == nil {
		var err error
		if marks, rebound, err = d.view.changes(ctx, r.REPL); err != nil {
			return fmt.Errorf("session %s: %w", st.id, err)
		}
	}
	if r.Feed == nil && !rebound && r.Stable != nil && bytes.Equal(r.Stable, d.stable) && len(d.decided) == 0 &&
		st.saved != nil && st.saved.Driver != nil && !st.saved.Driver.Feed && st.unchangedBy(ctx, r.REPL) {
		// The turn changed nothing (its clocks moved: they are stored
		// with the next turn that changes something).
		return nil
	}
	b := &blob{MontyVersion: st.montyVersion, ModuleSum: st.module, Driver: &drv}
	if saved := st.saved; saved != nil {
		b.TypeCheck, b.Decisions = saved.TypeCheck, saved.Decisions
		b.Names, b.JSON = saved.Names, saved.JSON
	} else {
		b.Names, b.JSON = []string{}, []byte("{}")
	}
	b.Decisions = withDecisions(b.Decisions, d.decided)
	var err error
	if r.Feed != nil {
		drv.Feed = true
		b.Dump, err = r.Feed.Dump(ctx)
	} else {
		var g *globalsView
		g, err = d.view.snapshot(ctx, viewTarget{r.Interpreter, r.REPL, runtime.DefaultLimits()}, d.opts.maxViewSize(), marks)
		r.Interpreter.SetLimits(r.Limits)
		if err != nil {
			return fmt.Errorf("session %s: %w", st.id, err)
		}
		b.Names, b.namesJSON, b.JSON = g.names, g.namesJSON, g.json
		var delta *runtime.Delta
		var since runtime.DumpMarks
		if st.lineage != nil {
			since = st.lineage.marks
		}
		if delta, err = r.REPL.DumpDelta(ctx, since); err == nil {
			b.Parts, err = st.lineage.next(delta, !d.opts.NoCompression)
		}
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", st.id, err)
	}
	mark := st.filesSection(b)
	if _, err := st.put(ctx, b, mark); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("session %s: %w: another writer stored this session since it was loaded", st.id, err)
		}
		return fmt.Errorf("session %s: %w", st.id, err)
	}
	d.decided, d.stable = nil, r.Stable
	return nil
}

// Errors of a driver's approvals.
var (
	// ErrApprovalPending: the wait for a decision ended (its context did:
	// the feed's turn time limit) before anyone decided; the run was taken
	// back, so a later decision finds no run.
	ErrApprovalPending = errors.New("session: no decision on the approval before the wait ended")
	// ErrNotDriven: the run is not one a driver waits on (DecideDriven):
	// resume it as any other.
	ErrNotDriven = errors.New("session: the run is not a driver's")
)

// Verdict is a decision a driver's approval got (AwaitApproval).
type Verdict struct {
	Approved bool
	// Who decided: the name or fingerprint of the API key, or the console
	// user, as the deciding surface names them. Never a secret.
	Who string
	// Call is the call as the run listed it, with its idempotency key.
	Call ToolCall
}

// approvalPoll bounds how often AwaitApproval looks for a decision.
const approvalPoll = 250 * time.Millisecond

// AwaitApproval stores the session with its feed paused at call, a method
// of a host object whose calls wait for a person's approval, as a run
// waiting for that approval: Session.Paused and Inspect list it as any
// other, the console shows it, and the HTTP API's resume decides it
// (DecideDriven stores the decision; the driver makes the call). It then
// waits until the decision is stored, and returns it; async says the
// method is async (the run is not stopped at it). When ctx ends first
// (the feed's turn time limit), the run is taken back (the session is
// stored without it: a later decision finds no run) and the error matches
// ErrApprovalPending; a decision stored at that moment wins. Errors of
// the store, and store.ErrConflict when the session was changed
// elsewhere meanwhile, end the wait too.
func (d *Driven) AwaitApproval(ctx context.Context, r DrivenREPL, drv Driver, call *runtime.FunctionCall, async bool) (*Verdict, error) {
	st := d.state
	rec := &pausedRun{ID: newRunID(), Calls: []storedCall{storeCall(call)}, TTL: int64(DefaultRunTTL), Driver: drv.Name}
	rec.Origin = rec.ID
	rec.Expires = time.Now().Add(DefaultRunTTL).UTC()
	if dl, ok := ctx.Deadline(); ok {
		rec.Expires = dl.UTC()
	}
	if !async {
		rec.Blocking = &call.CallID
	}
	if err := d.putFeed(ctx, r, drv, rec); err != nil {
		return nil, err
	}
	wait := time.NewTicker(approvalPoll)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			// Take the run back, unless a decision got there first.
			bg := context.WithoutCancel(ctx)
			err := d.putFeed(bg, r, drv, nil)
			if !errors.Is(err, store.ErrConflict) {
				if err == nil {
					err = fmt.Errorf("%w: run %s", ErrApprovalPending, rec.ID)
				}
				return nil, err
			}
			return d.verdict(bg, rec)
		case <-wait.C:
			changed, err := st.changed(ctx)
			if err != nil || !changed {
				if err != nil && ctx.Err() == nil {
					return nil, err
				}
				continue
			}
			return d.verdict(ctx, rec)
		}
	}
}

// verdict reads the decision on rec, once the store holds another state
// than the one AwaitApproval stored.
func (d *Driven) verdict(ctx context.Context, rec *pausedRun) (*Verdict, error) {
	st := d.state
	obj, err := st.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("session %s: reading the decision on run %s: %w", st.id, rec.ID, err)
	}
	b, err := st.decode(obj.Data)
	if err != nil {
		return nil, fmt.Errorf("session %s: reading the decision on run %s: %w", st.id, rec.ID, err)
	}
	if b.Run == nil || b.Run.ID != rec.ID || len(b.Run.Decided) == 0 {
		return nil, fmt.Errorf("session %s: %w: it was changed elsewhere while run %s waited for approval", st.id, store.ErrConflict, rec.ID)
	}
	st.adopt(obj.Info, b)
	dec := b.Run.Decided[0]
	return &Verdict{Approved: dec.Approve, Who: dec.Who, Call: b.Run.public(st.id).Calls[0]}, nil
}

// putFeed stores the session with its paused feed, and with rec as the
// run waiting for approval (nil: none), under compare-and-set.
func (d *Driven) putFeed(ctx context.Context, r DrivenREPL, drv Driver, rec *pausedRun) error {
	st := d.state
	drv.Feed = true
	b := &blob{MontyVersion: st.montyVersion, ModuleSum: st.module, Driver: &drv, Run: rec, Names: []string{}, JSON: []byte("{}")}
	if saved := st.saved; saved != nil {
		b.TypeCheck, b.Decisions, b.Names, b.JSON = saved.TypeCheck, saved.Decisions, saved.Names, saved.JSON
	}
	b.Decisions = withDecisions(b.Decisions, d.decided)
	var err error
	if b.Dump, err = r.Feed.Dump(ctx); err != nil {
		return fmt.Errorf("session %s: %w", st.id, err)
	}
	if _, err := st.put(ctx, b, st.filesSection(b)); err != nil {
		return fmt.Errorf("session %s: %w", st.id, err)
	}
	d.decided = nil
	return nil
}

// Record adds a decision the driver carried out to those the session
// keeps (Session.Decisions), stored with its next save.
func (d *Driven) Record(dec Decision) { d.decided = append(d.decided, dec) }

// DecideDriven stores decisions (approve or not, by call id) on run runID
// of the session stored under id when a driver's feed waits on that run
// (AwaitApproval): the driver makes the approved calls, and the session's
// Decisions get what came of them. who decided. It returns the run as it
// was listed. ErrNotDriven when the run is not a driver's (resume it as
// usual); ErrRunNotPaused when no such run waits (decided already, or
// taken back); ErrRunExpired past its wait; ErrBadResults when decisions
// do not answer its calls; store.ErrConflict when another decision got
// there at the same moment. Of Options it uses what OpenDriven does.
func DecideDriven(ctx context.Context, id string, opts Options, runID string, decisions map[string]bool, who string) (*Paused, error) {
	d, err := openDriven(ctx, id, opts, true, true)
	if err != nil {
		return nil, err
	}
	b := d.state.saved
	switch {
	case b != nil && b.Run == nil && b.Driver != nil && b.Driver.Feed:
		// A driver's feed waits on nothing stored: the wait ended.
		return nil, fmt.Errorf("%w: session %s has no run %s waiting (decided already, or its wait ended)", ErrRunNotPaused, id, runID)
	case b == nil || b.Run == nil || b.Run.Driver == "":
		return nil, ErrNotDriven
	case b.Run.ID != runID || len(b.Run.Decided) > 0:
		return nil, fmt.Errorf("%w: session %s has no run %s waiting (decided already, or its wait ended)", ErrRunNotPaused, id, runID)
	case !time.Now().Before(b.Run.Expires):
		return nil, fmt.Errorf("%w: session %s, run %s", ErrRunExpired, id, runID)
	}
	listed := b.Run.public(id)
	now := time.Now().UTC()
	rec := *b.Run
	rec.Decided = nil
	for callID, approve := range decisions {
		n, err := strconv.ParseUint(callID, 10, 32)
		if err != nil || callID != strconv.FormatUint(n, 10) || !slices.ContainsFunc(rec.Calls, func(c storedCall) bool { return c.ID == uint32(n) }) {
			return nil, fmt.Errorf("%w: %q is not a call of this run", ErrBadResults, callID)
		}
		rec.Decided = append(rec.Decided, drivenDecision{Call: uint32(n), Approve: approve, Who: who, At: now})
	}
	if len(rec.Decided) != len(rec.Calls) {
		return nil, fmt.Errorf("%w: the run waits on %d call(s); decide each, with approve", ErrBadResults, len(rec.Calls))
	}
	nb := *b
	nb.Run = &rec
	if _, err := d.state.put(ctx, &nb, d.state.filesSection(&nb)); err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	return listed, nil
}
