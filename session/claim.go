package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/telemetry"
)

// DefaultClaimLease is how long a claim holds when ResumeOptions.Lease is
// 0: a resume that claimed a run and has neither finished nor given up by
// then is taken to have died.
const DefaultClaimLease = 5 * time.Minute

// ClaimMargin is added to the lease a caller computes from its own time
// limits (agent and httpapi: the resume's time limit for each approved
// call and for the run, plus this), for the store's round trips and a
// slow process.
const ClaimMargin = 30 * time.Second

// ErrRunClaimed: another resume (in this process or another) claimed the
// paused run to make its approved calls, and its claim still holds. It
// matches ErrRunNotPaused too: the run is not paused for this resume.
var ErrRunClaimed error = claimedError{}

type claimedError struct{}

func (claimedError) Error() string {
	return "session: the paused run is being resumed elsewhere"
}

func (claimedError) Is(target error) bool { return target == ErrRunNotPaused }

// ResumeOptions configure ResumeOptions: who decides the calls a resume
// makes itself (the approved calls of tools that wait for a person's
// approval), and how they are made. The zero value is Resume. Check,
// Make and Name are called on the resume's goroutine, with the session
// held (they must not call the session).
type ResumeOptions struct {
	// Who decided the calls (a person, or the API key or client they
	// acted through), for the claim and the decisions. Never a secret.
	Who string
	// Claim lists the ids of the calls Make makes (the approved ones):
	// when it is not empty, the run is claimed in the store (a
	// compare-and-set save of its record with the claim) before Make is
	// called, so that of racing resumes, in this process or others,
	// exactly one makes them; the others fail with ErrRunClaimed.
	Claim []string
	// Name, when set, names a claimed call as the code calls it
	// ("github.delete_repo"), for the decision a lost claim records
	// (DecisionMayHaveRun); without it, the call's method name is.
	Name func(c ToolCall) string
	// Lease bounds the claim: a resume that finds a claim past its lease,
	// the run still paused, takes its holder to have died while the calls
	// may have run, and lists the run again (Paused.Previous,
	// ToolCall.MayHaveRun) instead of going on. 0 means
	// DefaultClaimLease. Set it to what the resume may take at most.
	Lease time.Duration
	// Check, when set, is called with the run once it is found and
	// before it is claimed: its error refuses the resume, nothing done.
	Check func(p *Paused) error
	// Make, when set, is called with the run (claimed when Claim is set)
	// and the results; it returns the results the run continues with
	// (the approved calls' outcomes in place, each with its Decision).
	// Its error ends the resume: a claimed run is then listed again with
	// the claimed calls marked as may have run.
	Make func(ctx context.Context, p *Paused, results []ToolResult) ([]ToolResult, error)
	// Idempotency, when set, makes the resume safe to retry: see
	// Idempotency. A relisted run's answer (Paused.Previous) stores no
	// key: nothing ran.
	Idempotency *Idempotency
}

// Claim is the claim of a paused run by a resume that makes its approved
// calls (Paused.Claim). It is a plain value, a copy of what is stored.
type Claim struct {
	// Who made the decisions the claiming resume carries out.
	Who string
	// At is when the run was claimed; Until when the claim lapses.
	At, Until time.Time
	// Calls are the ids of the calls the claiming resume makes.
	Calls []string
}

// runClaim is a Claim as stored in the paused-run record.
type runClaim struct {
	// Token tells the claiming resume's claim from another's.
	Token string    `json:"token"`
	Who   string    `json:"who"`
	At    time.Time `json:"at"`
	Until time.Time `json:"until"`
	Calls []uint32  `json:"calls"`
	// Names are the tools of Calls as the code calls them, in order
	// (ResumeOptions.Name; "" when not named).
	Names []string `json:"names,omitempty"`
}

func (c *runClaim) public() *Claim {
	if c == nil {
		return nil
	}
	out := &Claim{Who: c.Who, At: c.At, Until: c.Until}
	for _, id := range c.Calls {
		out.Calls = append(out.Calls, strconv.FormatUint(uint64(id), 10))
	}
	return out
}

// Decision outcomes (Decision.Outcome).
const (
	// DecisionOK: approved, the call was made and returned.
	DecisionOK = "ok"
	// DecisionRaised: approved, the call was made and raised
	// Decision.Exception.
	DecisionRaised = "raised"
	// DecisionDenied: refused; the call raised PermissionError in the
	// code, nothing was made.
	DecisionDenied = "denied"
	// DecisionMayHaveRun: approved, but the resume that made the call
	// died or failed before its outcome was stored: the call may have
	// run. The run was listed again for a new decision.
	DecisionMayHaveRun = "may_have_run"
)

// MaxDecisions is how many decisions a session keeps (Session.Decisions):
// the newest.
const MaxDecisions = 100

// Decision is one decision on a call that waited for a person's approval,
// as the session keeps it (Session.Decisions) and the run's events, log
// and spans report it. It is a plain value.
type Decision struct {
	// Time is when the decision was carried out (or found uncertain).
	Time time.Time `json:"time"`
	// Who decided: an API key's name or fingerprint, an MCP client's
	// name; never a secret.
	Who string `json:"who"`
	// RunID is the paused run the call belonged to; CallID the call.
	RunID  string `json:"run_id"`
	CallID string `json:"call_id"`
	// Tool is the tool as the code calls it ("github.delete_repo").
	Tool string `json:"tool"`
	// Args are the call's arguments, as Python spells them, clipped.
	Args string `json:"args,omitempty"`
	// IdempotencyKey is the call's key (ToolCall.IdempotencyKey).
	IdempotencyKey string `json:"idempotency_key"`
	// Approved is the decision; Outcome what came of it (DecisionOK,
	// DecisionRaised, DecisionDenied, DecisionMayHaveRun).
	Approved bool   `json:"approved"`
	Outcome  string `json:"outcome"`
	// Exception is the type of the exception the call raised
	// (DecisionRaised).
	Exception string `json:"exception,omitempty"`
}

// IdempotencyKey is the key of call callID of the execution origin of
// session sid (ToolCall.IdempotencyKey): the same for every resume of the
// call, in every process.
func IdempotencyKey(sid, origin, callID string) string {
	h := sha256.New()
	for _, part := range []string{"monty-go/idempotency/v1", sid, origin, callID} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "mgik-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// origin names the execution the run record belongs to, the same across
// its pauses: the id of its first pause (records stored before origins
// were recorded: the id of the pause at hand).
func (r *pausedRun) origin() string {
	if r.Origin != "" {
		return r.Origin
	}
	return r.ID
}

// withDecisions is the list of decisions kept, older ones then added, the
// newest MaxDecisions.
func withDecisions(older, added []Decision) []Decision {
	all := append(slices.Clone(older), added...)
	if len(all) > MaxDecisions {
		all = all[len(all)-MaxDecisions:]
	}
	return all
}

// claimIDs parses the ids of the calls to claim, which must be calls of
// rec.
func (r *pausedRun) claimIDs(ids []string) ([]uint32, error) {
	out := make([]uint32, 0, len(ids))
	for _, id := range ids {
		n, err := strconv.ParseUint(id, 10, 32)
		if err != nil || !slices.ContainsFunc(r.Calls, func(c storedCall) bool { return c.ID == uint32(n) }) {
			return nil, fmt.Errorf("%w: %q is not a call of this run", ErrBadResults, id)
		}
		out = append(out, uint32(n))
	}
	return out, nil
}

// expiresAt is when the paused run stops waiting: its TTL, or later while
// a claim on it holds (a resume is making its approved calls; the run
// must outlive it so that their outcome, or its loss, is stored).
func (r *pausedRun) expiresAt() time.Time {
	if r.Claim != nil && r.Claim.Until.After(r.Expires) {
		return r.Claim.Until
	}
	return r.Expires
}

// relisted is the record of rec listed again after its claim was lost
// (the holder died, or failed after making the calls): the same calls
// under a new run id, those of the claim marked as may have run, and
// Previous naming rec, so that a resume of rec's id is answered with it.
func (r *pausedRun) relisted() *pausedRun {
	next := *r
	next.ID, next.Previous, next.Claim, next.Origin = newRunID(), r.ID, nil, r.origin()
	if r.TTL > 0 {
		// A new decision is asked for: the run waits its whole TTL again.
		next.Expires = time.Now().Add(time.Duration(r.TTL)).UTC().Truncate(time.Millisecond)
	}
	next.Uncertain = slices.Clone(r.Uncertain)
	if r.Claim != nil {
		for _, id := range r.Claim.Calls {
			if !slices.Contains(next.Uncertain, id) {
				next.Uncertain = append(next.Uncertain, id)
			}
		}
	}
	slices.Sort(next.Uncertain)
	return &next
}

// uncertainDecisions are the decisions that rec's claim leaves uncertain,
// at now, for the session stored under sid.
func (r *pausedRun) uncertainDecisions(sid string, now time.Time) []Decision {
	if r.Claim == nil {
		return nil
	}
	var out []Decision
	for _, c := range r.Calls {
		i := slices.Index(r.Claim.Calls, c.ID)
		if i < 0 {
			continue
		}
		name := c.Name
		if i < len(r.Claim.Names) && r.Claim.Names[i] != "" {
			name = r.Claim.Names[i]
		}
		id := strconv.FormatUint(uint64(c.ID), 10)
		out = append(out, Decision{Time: now, Who: r.Claim.Who, RunID: r.ID, CallID: id, Tool: name, Args: telemetry.Clip(c.text(name)),
			IdempotencyKey: IdempotencyKey(sid, r.origin(), id), Approved: true, Outcome: DecisionMayHaveRun})
	}
	return out
}

// text is the call as Python spells it, named name.
func (c storedCall) text(name string) string {
	args, kwargs, _ := c.decode() // checked when stored or loaded
	return ToolCall{Args: args, Kwargs: kwargs}.Text(name)
}

func newClaimToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isConflict reports a lost compare-and-set.
func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
