// Package storetest is the conformance suite that every store.Store
// implementation runs from its tests, plus helpers those tests share: the
// environment of the real services started by scripts/services.sh and the
// save/load benchmark.
//
// Run checks the contract of store.Store: round trips, Info fields, ids,
// conditional writes, deletion, listing, empty and large blobs and
// concurrent compare-and-set. RunTTL checks expiry for stores configured
// with a short time to live. RunUnreadable checks that List skips and
// reports damaged entries, for stores whose backend can hold them.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session/store"
)

// timeSlack is how far two timestamps of the same event may differ after a
// round trip through a store (a store may keep less than nanosecond
// precision).
const timeSlack = time.Millisecond

// Run runs the conformance suite. newStore is called once per subtest and
// must return an empty store that the subtest may use freely; it should
// register its own cleanup (closing the store, removing test data) with
// t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, newStore(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, newStore(t)) })
	t.Run("IDs", func(t *testing.T) { testIDs(t, newStore(t)) })
	t.Run("InvalidIDs", func(t *testing.T) { testInvalidIDs(t, newStore(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, newStore(t)) })
	t.Run("Conditional", func(t *testing.T) { testConditional(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testList(t, newStore(t)) })
	t.Run("EmptyBlob", func(t *testing.T) { testEmpty(t, newStore(t)) })
	t.Run("LargeBlob", func(t *testing.T) { testLarge(t, newStore(t)) })
	t.Run("ConcurrentCAS", func(t *testing.T) { testConcurrentCAS(t, newStore(t)) })
	t.Run("ConcurrentIDs", func(t *testing.T) { testConcurrentIDs(t, newStore(t)) })
}

// RunTTL checks expiry. newStore must return an empty store whose blobs
// expire ttl after their last Put; ttl should be short (a few hundred
// milliseconds to a few seconds, depending on the backend's latency) since
// the test sleeps for it several times.
func RunTTL(t *testing.T, newStore func(t *testing.T, ttl time.Duration) store.Store, ttl time.Duration) {
	t.Run("TTL", func(t *testing.T) { testTTL(t, newStore(t, ttl), ttl) })
	t.Run("TTLRefreshedOnPut", func(t *testing.T) { testTTLRefresh(t, newStore(t, ttl), ttl) })
}

// Ctx returns a context that is canceled when the test ends, with a generous
// deadline so that a hung backend fails the test instead of the run.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// RandomBytes returns n incompressible bytes.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// CheckInfo fails t unless info describes data stored under id: id, size,
// checksum, a version, a source, and created <= modified.
func CheckInfo(t testing.TB, info store.Info, id string, data []byte) {
	t.Helper()
	if info.ID != id {
		t.Errorf("Info.ID = %q, want %q", info.ID, id)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("%s: Info.Size = %d, want %d", id, info.Size, len(data))
	}
	if want := store.Checksum(data); info.SHA256 != want {
		t.Errorf("%s: Info.SHA256 = %s, want %s", id, info.SHA256, want)
	}
	if info.Version == "" {
		t.Errorf("%s: Info.Version is empty", id)
	}
	if info.Source == "" {
		t.Errorf("%s: Info.Source is empty", id)
	}
	if info.Created.IsZero() || info.Modified.IsZero() {
		t.Errorf("%s: Info.Created %v / Modified %v must be set", id, info.Created, info.Modified)
	}
	if info.Modified.Before(info.Created.Add(-timeSlack)) {
		t.Errorf("%s: Info.Modified %v is before Created %v", id, info.Modified, info.Created)
	}
	if !info.Expires.IsZero() && !info.Expires.After(info.Modified) {
		t.Errorf("%s: Info.Expires %v is not after Modified %v", id, info.Expires, info.Modified)
	}
}

// SameInfo fails t unless got and want describe the same stored blob.
// Source is not compared: it says where a read was served from (a tiered
// store may serve the same blob from either tier), not what the blob is.
func SameInfo(t testing.TB, what string, got, want store.Info) {
	t.Helper()
	if got.ID != want.ID || got.Size != want.Size || got.SHA256 != want.SHA256 ||
		got.Version != want.Version {
		t.Errorf("%s: info %+v, want %+v", what, got, want)
		return
	}
	for _, f := range []struct {
		name      string
		got, want time.Time
	}{{"Created", got.Created, want.Created}, {"Modified", got.Modified, want.Modified}, {"Expires", got.Expires, want.Expires}} {
		if !closeTimes(f.got, f.want) {
			t.Errorf("%s: %s %v, want %v", what, f.name, f.got, f.want)
		}
	}
}

func closeTimes(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() == b.IsZero()
	}
	d := a.Sub(b)
	return d <= timeSlack && d >= -timeSlack
}

func mustPut(t testing.TB, s store.Store, id string, data []byte, cond store.Cond) store.Info {
	t.Helper()
	info, err := s.Put(Ctx(t), id, data, cond)
	if err != nil {
		t.Fatalf("Put(%q, %d bytes, %+v): %v", id, len(data), cond, err)
	}
	CheckInfo(t, info, id, data)
	return info
}

func mustGet(t testing.TB, s store.Store, id string, want []byte) store.Object {
	t.Helper()
	obj, err := s.Get(Ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	if !bytes.Equal(obj.Data, want) {
		t.Fatalf("Get(%q) = %d bytes (sha %s), want %d bytes (sha %s)", id, len(obj.Data),
			store.Checksum(obj.Data), len(want), store.Checksum(want))
	}
	CheckInfo(t, obj.Info, id, want)
	return obj
}

func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one matching %v", what, err, target)
	}
}

func testRoundTrip(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	data := []byte("hello, session")
	before := time.Now()
	put := mustPut(t, s, "s1", data, store.Cond{})
	after := time.Now()
	if put.Created.Before(before.Add(-time.Minute)) || put.Created.After(after.Add(time.Minute)) {
		t.Errorf("Created %v is not close to now (%v)", put.Created, before)
	}
	if !closeTimes(put.Created, put.Modified) {
		t.Errorf("first Put: Created %v != Modified %v", put.Created, put.Modified)
	}
	data[0] = 'J' // the store must have copied the caller's slice
	want := []byte("hello, session")
	got := mustGet(t, s, "s1", want)
	SameInfo(t, "Get after Put", got.Info, put)
	got.Data[0] = 'Y' // nor may a caller's change to a returned slice leak back
	mustGet(t, s, "s1", want)
	st, err := s.Stat(ctx, "s1")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	SameInfo(t, "Stat after Put", st, put)
}

func testOverwrite(t *testing.T, s store.Store) {
	first := mustPut(t, s, "s", []byte("one"), store.Cond{})
	time.Sleep(5 * time.Millisecond)
	second := mustPut(t, s, "s", []byte("one"), store.Cond{}) // same bytes: still a new version
	if second.Version == first.Version {
		t.Errorf("Put of identical data kept version %q; every Put must change it", first.Version)
	}
	if !closeTimes(second.Created, first.Created) {
		t.Errorf("overwrite changed Created from %v to %v", first.Created, second.Created)
	}
	if !second.Modified.After(first.Modified) {
		t.Errorf("overwrite: Modified %v not after previous %v", second.Modified, first.Modified)
	}
	third := mustPut(t, s, "s", []byte("three"), store.Cond{})
	got := mustGet(t, s, "s", []byte("three"))
	SameInfo(t, "Get after overwrite", got.Info, third)
	seen := map[string]bool{first.Version: true, second.Version: true}
	if seen[third.Version] {
		t.Errorf("version %q reused", third.Version)
	}
}

// ValidIDs are ids that every store must keep apart and round-trip,
// including ones that are awkward as file names or object keys.
var ValidIDs = []string{
	"a", "A", "a/b", "a/b/c", "a.b", "a/b.c", "/lead", "trail/", "a//b", "//", "/",
	"user:42", "x.y-z_w", "...", "a/.../b", ".hidden", "a-", "a_/_b",
	strings.Repeat("z", 200), strings.Repeat("/", 200), strings.Repeat("d/", 100),
}

// InvalidIDs are ids that every store must refuse with ErrInvalidID.
var InvalidIDs = []string{
	"", ".", "..", "../x", "a/../b", "a/..", "./a", "a/./b", "x/.", strings.Repeat("a", 201),
	"a b", "a\x00b", "é", "a\\b", "a?b", "a*b", "a\nb", "a%2Fb", "a\tb", "a#b", "~a",
}

func testIDs(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	for i, id := range ValidIDs {
		mustPut(t, s, id, []byte(fmt.Sprintf("blob %d for %q", i, id)), store.Cond{IfAbsent: true})
	}
	for i, id := range ValidIDs {
		mustGet(t, s, id, []byte(fmt.Sprintf("blob %d for %q", i, id)))
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := slices.Clone(ValidIDs)
	slices.Sort(want)
	if got := infoIDs(list); !slices.Equal(got, want) {
		t.Errorf("List ids = %q, want %q", got, want)
	}
	for _, id := range ValidIDs {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatalf("Delete(%q): %v", id, err)
		}
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after deleting all = %v, %v; want empty", infoIDs(list), err)
	}
}

func testInvalidIDs(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	for _, id := range InvalidIDs {
		_, err := s.Get(ctx, id)
		wantErr(t, fmt.Sprintf("Get(%q)", id), err, store.ErrInvalidID)
		_, err = s.Put(ctx, id, []byte("x"), store.Cond{})
		wantErr(t, fmt.Sprintf("Put(%q)", id), err, store.ErrInvalidID)
		_, err = s.Put(ctx, id, []byte("x"), store.Cond{IfAbsent: true})
		wantErr(t, fmt.Sprintf("Put(%q, IfAbsent)", id), err, store.ErrInvalidID)
		err = s.Delete(ctx, id)
		wantErr(t, fmt.Sprintf("Delete(%q)", id), err, store.ErrInvalidID)
		_, err = s.Stat(ctx, id)
		wantErr(t, fmt.Sprintf("Stat(%q)", id), err, store.ErrInvalidID)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after invalid puts = %v, %v; want empty", infoIDs(list), err)
	}
}

func testNotFound(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	_, err := s.Get(ctx, "missing")
	wantErr(t, "Get(missing)", err, store.ErrNotFound)
	_, err = s.Stat(ctx, "missing")
	wantErr(t, "Stat(missing)", err, store.ErrNotFound)
	if err := s.Delete(ctx, "missing"); err != nil {
		t.Errorf("Delete(missing) = %v, want nil", err)
	}
	_, err = s.Put(ctx, "missing", []byte("x"), store.Cond{IfVersion: "v1"})
	wantErr(t, "Put(missing, IfVersion)", err, store.ErrConflict)
	_, err = s.Get(ctx, "missing")
	wantErr(t, "Get after refused Put", err, store.ErrNotFound)
	mustPut(t, s, "present", []byte("p"), store.Cond{})
	_, err = s.Get(ctx, "present/child")
	wantErr(t, "Get(present/child)", err, store.ErrNotFound)
	_, err = s.Get(ctx, "pres")
	wantErr(t, "Get(pres)", err, store.ErrNotFound)
}

func testDelete(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	first := mustPut(t, s, "d", []byte("gone soon"), store.Cond{})
	mustPut(t, s, "keep", []byte("kept"), store.Cond{})
	for i := 0; i < 2; i++ { // deleting twice is fine
		if err := s.Delete(ctx, "d"); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	_, err := s.Get(ctx, "d")
	wantErr(t, "Get after Delete", err, store.ErrNotFound)
	_, err = s.Stat(ctx, "d")
	wantErr(t, "Stat after Delete", err, store.ErrNotFound)
	mustGet(t, s, "keep", []byte("kept"))
	// A version from before the delete never matches a new blob.
	_, err = s.Put(ctx, "d", []byte("stale"), store.Cond{IfVersion: first.Version})
	wantErr(t, "Put with pre-delete version", err, store.ErrConflict)
	again := mustPut(t, s, "d", []byte("back"), store.Cond{IfAbsent: true})
	if again.Version == first.Version {
		t.Errorf("re-created blob reuses version %q", again.Version)
	}
	_, err = s.Put(ctx, "d", []byte("stale"), store.Cond{IfVersion: first.Version})
	wantErr(t, "Put with pre-delete version on re-created blob", err, store.ErrConflict)
	mustGet(t, s, "d", []byte("back"))
}

func testConditional(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	v1 := mustPut(t, s, "c", []byte("v1"), store.Cond{IfAbsent: true})
	_, err := s.Put(ctx, "c", []byte("other"), store.Cond{IfAbsent: true})
	wantErr(t, "second IfAbsent Put", err, store.ErrConflict)
	mustGet(t, s, "c", []byte("v1"))
	v2 := mustPut(t, s, "c", []byte("v2"), store.Cond{IfVersion: v1.Version})
	if v2.Version == v1.Version {
		t.Fatalf("CAS Put kept version %q", v1.Version)
	}
	if !closeTimes(v2.Created, v1.Created) {
		t.Errorf("CAS Put changed Created from %v to %v", v1.Created, v2.Created)
	}
	_, err = s.Put(ctx, "c", []byte("stale"), store.Cond{IfVersion: v1.Version})
	wantErr(t, "Put with stale version", err, store.ErrConflict)
	_, err = s.Put(ctx, "c", []byte("bogus"), store.Cond{IfVersion: "not-a-version"})
	wantErr(t, "Put with bogus version", err, store.ErrConflict)
	got := mustGet(t, s, "c", []byte("v2"))
	SameInfo(t, "Get after refused Puts", got.Info, v2)
	v3 := mustPut(t, s, "c", []byte("v3"), store.Cond{IfVersion: got.Info.Version})
	mustGet(t, s, "c", []byte("v3"))
	// An unconditional Put always wins and changes the version.
	v4 := mustPut(t, s, "c", []byte("v4"), store.Cond{})
	_, err = s.Put(ctx, "c", []byte("stale"), store.Cond{IfVersion: v3.Version})
	wantErr(t, "Put with version overwritten unconditionally", err, store.ErrConflict)
	st, err := s.Stat(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	SameInfo(t, "Stat after CAS", st, v4)
}

func testList(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List on empty store: %v", err)
	}
	if len(list) != 0 {
		t.Fatalf("List on empty store = %q", infoIDs(list))
	}
	ids := []string{"m", "b/2", "z", "b/10", "a", "B", "b", "b/1/x", "aa"}
	infos := map[string]store.Info{}
	for i, id := range ids {
		infos[id] = mustPut(t, s, id, bytes.Repeat([]byte{byte(i)}, i*100), store.Cond{})
	}
	list, err = s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if got := infoIDs(list); !slices.Equal(got, want) {
		t.Fatalf("List ids = %q, want %q (sorted by id)", got, want)
	}
	for _, info := range list {
		SameInfo(t, "List entry "+info.ID, info, infos[info.ID])
	}
	if err := s.Delete(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	list, err = s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := infoIDs(list); slices.Contains(got, "m") || len(got) != len(ids)-1 {
		t.Errorf("List after Delete(m) = %q", got)
	}
}

func testEmpty(t *testing.T, s store.Store) {
	mustPut(t, s, "empty", []byte{}, store.Cond{})
	obj := mustGet(t, s, "empty", nil)
	if obj.Info.SHA256 != store.Checksum(nil) {
		t.Errorf("empty blob checksum %s", obj.Info.SHA256)
	}
	mustPut(t, s, "nil", nil, store.Cond{IfAbsent: true})
	mustGet(t, s, "nil", []byte{})
	mustPut(t, s, "empty", []byte("now full"), store.Cond{IfVersion: obj.Info.Version})
	mustGet(t, s, "empty", []byte("now full"))
}

func testLarge(t *testing.T, s store.Store) {
	big := RandomBytes(10 << 20)
	info := mustPut(t, s, "big", big, store.Cond{})
	got := mustGet(t, s, "big", big)
	SameInfo(t, "Get of 10 MB blob", got.Info, info)
	big2 := RandomBytes(10<<20 + 17)
	mustPut(t, s, "big", big2, store.Cond{IfVersion: info.Version})
	mustGet(t, s, "big", big2)
}

// Counter is a read-modify-write loop used by the concurrency tests (here
// and in the stores' cross-process tests): it increments the decimal
// counter stored under id with IfVersion (IfAbsent when missing), retrying
// on ErrConflict. It returns the value it wrote and the number of conflicts
// it saw.
func Counter(ctx context.Context, s store.Store, id string) (value int, conflicts int, err error) {
	for {
		cond := store.Cond{IfAbsent: true}
		n := 0
		obj, err := s.Get(ctx, id)
		switch {
		case err == nil:
			n, err = strconv.Atoi(string(obj.Data))
			if err != nil {
				return 0, conflicts, fmt.Errorf("counter %q holds %q: %v", id, obj.Data, err)
			}
			cond = store.Cond{IfVersion: obj.Info.Version}
		case !errors.Is(err, store.ErrNotFound):
			return 0, conflicts, err
		}
		_, err = s.Put(ctx, id, []byte(strconv.Itoa(n+1)), cond)
		if err == nil {
			return n + 1, conflicts, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return 0, conflicts, err
		}
		conflicts++
	}
}

func testConcurrentCAS(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	const workers, each = 8, 20
	var (
		mu        sync.Mutex
		written   = map[int]bool{}
		conflicts int
		wg        sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v, c, err := Counter(ctx, s, "counter")
				mu.Lock()
				conflicts += c
				if err != nil {
					t.Errorf("increment: %v", err)
				} else if written[v] {
					t.Errorf("value %d written twice: an update was lost", v)
				}
				written[v] = true
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	obj := mustGet(t, s, "counter", []byte(strconv.Itoa(workers*each)))
	t.Logf("%d successful increments, %d conflicts retried, final %s", len(written), conflicts, obj.Data)
	if len(written) != workers*each {
		t.Errorf("%d successful writes, want %d", len(written), workers*each)
	}
}

func testConcurrentIDs(t *testing.T, s store.Store) {
	ctx := Ctx(t)
	const workers, each = 8, 10
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				id := fmt.Sprintf("w%d/s%d", w, i)
				data := []byte(id)
				if _, err := s.Put(ctx, id, data, store.Cond{IfAbsent: true}); err != nil {
					t.Errorf("Put(%q): %v", id, err)
					return
				}
				if obj, err := s.Get(ctx, id); err != nil || !bytes.Equal(obj.Data, data) {
					t.Errorf("Get(%q) = %q, %v", id, obj.Data, err)
				}
				if _, err := s.List(ctx); err != nil {
					t.Errorf("List: %v", err)
				}
				if i%2 == 0 {
					if err := s.Delete(ctx, id); err != nil {
						t.Errorf("Delete(%q): %v", id, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != workers*each/2 {
		t.Errorf("List has %d entries, want %d", len(list), workers*each/2)
	}
}

func testTTL(t *testing.T, s store.Store, ttl time.Duration) {
	ctx := Ctx(t)
	info := mustPut(t, s, "t", []byte("short-lived"), store.Cond{})
	if info.Expires.IsZero() {
		t.Fatalf("Put on a store with TTL %v returned no Expires", ttl)
	}
	if d := info.Expires.Sub(info.Modified); d < ttl-timeSlack || d > ttl+time.Second {
		t.Errorf("Expires - Modified = %v, want about %v", d, ttl)
	}
	mustPut(t, s, "other", []byte("also short-lived"), store.Cond{})
	got := mustGet(t, s, "t", []byte("short-lived"))
	SameInfo(t, "Get before expiry", got.Info, info)

	time.Sleep(ttl + ttl/2 + 50*time.Millisecond)
	_, err := s.Get(ctx, "t")
	wantErr(t, "Get after expiry", err, store.ErrNotFound)
	_, err = s.Stat(ctx, "other")
	wantErr(t, "Stat after expiry", err, store.ErrNotFound)
	if list, err := s.List(ctx); err != nil || len(list) != 0 {
		t.Errorf("List after expiry = %q, %v; want empty", infoIDs(list), err)
	}
	_, err = s.Put(ctx, "t", []byte("stale"), store.Cond{IfVersion: info.Version})
	wantErr(t, "Put with version of expired blob", err, store.ErrConflict)
	fresh := mustPut(t, s, "t", []byte("fresh"), store.Cond{IfAbsent: true})
	if fresh.Version == info.Version {
		t.Errorf("re-created blob reuses version")
	}
	mustGet(t, s, "t", []byte("fresh"))
	if err := s.Delete(ctx, "other"); err != nil {
		t.Errorf("Delete of expired blob: %v", err)
	}
}

func testTTLRefresh(t *testing.T, s store.Store, ttl time.Duration) {
	ctx := Ctx(t)
	first := mustPut(t, s, "r", []byte("1"), store.Cond{})
	time.Sleep(ttl * 6 / 10)
	second := mustPut(t, s, "r", []byte("2"), store.Cond{IfVersion: first.Version})
	if !second.Expires.After(first.Expires) {
		t.Errorf("Put did not push expiry forward: %v then %v", first.Expires, second.Expires)
	}
	time.Sleep(ttl * 6 / 10) // past the first expiry, before the second
	if time.Now().Before(second.Expires.Add(-50 * time.Millisecond)) {
		mustGet(t, s, "r", []byte("2"))
	}
	time.Sleep(time.Until(second.Expires) + ttl/2 + 50*time.Millisecond)
	_, err := s.Get(ctx, "r")
	wantErr(t, "Get after refreshed expiry", err, store.ErrNotFound)
}

// Damage plants one unreadable entry into a store's backend, for
// RunUnreadable.
type Damage struct {
	// Name names the subtest.
	Name string
	// Plant damages the backend of s (a store from the newStore passed to
	// RunUnreadable) so that it holds one unreadable entry, and returns the
	// id that List must report in Skipped.ID: the session id the entry
	// belongs to, or "" when the entry does not reveal it. It may call
	// t.Skip when the damage cannot be planted here.
	Plant func(t *testing.T, s store.Store) (id string)
}

// RunUnreadable checks, in one subtest per damage, that one damaged entry
// does not break List: List returns every readable blob and an
// *store.UnreadableError that names the damaged entry and matches
// store.ErrUnreadable but not store.ErrUnavailable. When the entry's id is
// known, Get and Stat of it fail with store.ErrUnreadable, and Delete
// removes it so that List succeeds again.
func RunUnreadable(t *testing.T, newStore func(t *testing.T) store.Store, damages []Damage) {
	for _, d := range damages {
		t.Run("Unreadable/"+d.Name, func(t *testing.T) { testUnreadable(t, newStore(t), d) })
	}
}

func testUnreadable(t *testing.T, s store.Store, d Damage) {
	ctx := Ctx(t)
	good := []string{"a", "m/1", "z"}
	infos := map[string]store.Info{}
	for _, id := range good {
		infos[id] = mustPut(t, s, id, []byte("readable "+id), store.Cond{})
	}
	id := d.Plant(t, s)
	checkList := func(what string, list []store.Info) {
		t.Helper()
		if got := infoIDs(list); !slices.Equal(got, good) {
			t.Fatalf("%s: List ids = %q, want the readable ones %q", what, got, good)
		}
		for _, info := range list {
			SameInfo(t, what+": List entry "+info.ID, info, infos[info.ID])
		}
	}
	list, err := s.List(ctx)
	skipped, fatal := store.SplitListError(err)
	if fatal != nil {
		t.Fatalf("List failed as a whole on one damaged entry: %v", fatal)
	}
	if !errors.Is(err, store.ErrUnreadable) || errors.Is(err, store.ErrUnavailable) {
		t.Errorf("List error %v: want one matching ErrUnreadable and not ErrUnavailable", err)
	}
	if len(skipped) != 1 {
		t.Fatalf("List skipped %+v; want the one damaged entry", skipped)
	}
	sk := skipped[0]
	if sk.ID != id || sk.Key == "" || !errors.Is(sk.Err, store.ErrUnreadable) {
		t.Errorf("skipped %+v; want ID %q, a Key and an Err matching ErrUnreadable", sk, id)
	}
	t.Logf("skipped %s: %v", sk.Name(), sk.Err)
	checkList("with a damaged entry", list)
	if id == "" {
		return
	}
	_, err = s.Get(ctx, id)
	wantErr(t, "Get of the damaged entry", err, store.ErrUnreadable)
	_, err = s.Stat(ctx, id)
	wantErr(t, "Stat of the damaged entry", err, store.ErrUnreadable)
	if err := s.Delete(ctx, id); err != nil {
		t.Fatalf("Delete of the damaged entry: %v", err)
	}
	list, err = s.List(ctx)
	if err != nil {
		t.Fatalf("List after deleting the damaged entry: %v", err)
	}
	checkList("after Delete", list)
}

func infoIDs(list []store.Info) []string {
	ids := make([]string, len(list))
	for i, info := range list {
		ids[i] = info.ID
	}
	return ids
}

// Bench runs the save/load benchmark on s: for each size, one Put and one
// Get of a random (incompressible) blob per iteration. Store packages call
// it from BenchmarkSaveLoad.
func Bench(b *testing.B, s store.Store) {
	ctx := context.Background()
	for _, size := range []struct {
		name string
		n    int
	}{{"1KB", 1 << 10}, {"100KB", 100 << 10}, {"1MB", 1 << 20}, {"10MB", 10 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			data := RandomBytes(size.n)
			id := "bench/" + size.name
			b.SetBytes(int64(2 * size.n))
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Put(ctx, id, data, store.Cond{}); err != nil {
					b.Fatal(err)
				}
				obj, err := s.Get(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if len(obj.Data) != size.n {
					b.Fatalf("got %d bytes", len(obj.Data))
				}
			}
			b.StopTimer()
			_ = s.Delete(ctx, id)
		})
	}
}

// Env returns the environment variable name, failing t when it is unset:
// the tests of the Redis, S3 and tiered stores need the real servers that
// scripts/services.sh starts (scripts/test.sh does that).
func Env(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if testing.Short() {
			t.Skip("needs Redis and S3: -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatalf("%s is not set: these tests need the real Redis and S3 servers; run `scripts/services.sh start && eval \"$(scripts/services.sh env)\"` from the repository root (scripts/test.sh does this), then run the tests again", name)
	}
	return v
}

// RedisURL returns MONTY_TEST_REDIS_URL (see Env).
func RedisURL(t testing.TB) string { return Env(t, "MONTY_TEST_REDIS_URL") }

// S3Env is the S3-compatible server started by scripts/services.sh.
type S3Env struct {
	Endpoint  string // host:port (MONTY_TEST_S3_ENDPOINT)
	AccessKey string // MONTY_TEST_S3_ACCESS_KEY
	SecretKey string // MONTY_TEST_S3_SECRET_KEY
	Bucket    string // MONTY_TEST_S3_BUCKET
}

// S3 returns the MONTY_TEST_S3_* settings (see Env).
func S3(t testing.TB) S3Env {
	return S3Env{
		Endpoint:  Env(t, "MONTY_TEST_S3_ENDPOINT"),
		AccessKey: Env(t, "MONTY_TEST_S3_ACCESS_KEY"),
		SecretKey: Env(t, "MONTY_TEST_S3_SECRET_KEY"),
		Bucket:    Env(t, "MONTY_TEST_S3_BUCKET"),
	}
}

// UniquePrefix returns a key prefix no other test run uses ("test/<name>/<random>/"),
// for stores whose backend is shared between tests.
func UniquePrefix(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("test/%s/%x/", name, RandomBytes(6))
}
