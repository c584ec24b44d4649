package tiered_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/storetest"
	"github.com/monty-go/monty/session/store/tiered"
)

func newTiered(t testing.TB, hot, cold store.Store, opts tiered.Options) *tiered.Store {
	t.Helper()
	opts.Hot, opts.Cold = hot, cold
	opts.Logf = t.Logf
	s, err := tiered.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func memTiers(ttl time.Duration) (*memstore.Store, *memstore.Store) {
	return memstore.New(memstore.Options{TTL: ttl}), memstore.New(memstore.Options{TTL: ttl})
}

// realTiers returns a Redis hot tier and an S3 archive on the servers
// started by scripts/services.sh, under prefixes of their own that are
// cleaned up when the test ends.
func realTiers(t testing.TB, hotTTL, coldTTL time.Duration) (*redisstore.Store, *s3store.Store) {
	t.Helper()
	ctx := storetest.Ctx(t)
	prefix := storetest.UniquePrefix(t)
	hot, err := redisstore.New(ctx, redisstore.Options{URL: storetest.RedisURL(t), Prefix: "monty-" + prefix, TTL: hotTTL})
	if err != nil {
		t.Fatal(err)
	}
	env := storetest.S3(t)
	cold, err := s3store.New(ctx, s3store.Options{
		Endpoint: env.Endpoint, Bucket: env.Bucket, AccessKey: env.AccessKey, SecretKey: env.SecretKey,
		Prefix: prefix, TTL: coldTTL,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := hot.Client().Scan(ctx, 0, hot.Prefix()+"*", 1000).Iterator()
		for iter.Next(ctx) {
			hot.Client().Del(ctx, iter.Val())
		}
		for obj := range cold.Client().ListObjects(ctx, cold.Bucket(), minio.ListObjectsOptions{Prefix: cold.Prefix(), Recursive: true}) {
			if obj.Err == nil {
				_ = cold.Client().RemoveObject(ctx, cold.Bucket(), obj.Key, minio.RemoveObjectOptions{})
			}
		}
	})
	return hot, cold
}

func TestConformanceMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		hot, cold := memTiers(0)
		return newTiered(t, hot, cold, tiered.Options{})
	})
	storetest.RunTTL(t, func(t *testing.T, ttl time.Duration) store.Store {
		hot, cold := memTiers(ttl)
		return newTiered(t, hot, cold, tiered.Options{})
	}, 200*time.Millisecond)
}

func TestConformanceRedisS3(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		hot, cold := realTiers(t, 0, 0)
		return newTiered(t, hot, cold, tiered.Options{})
	})
	storetest.RunTTL(t, func(t *testing.T, ttl time.Duration) store.Store {
		hot, cold := realTiers(t, ttl, ttl)
		return newTiered(t, hot, cold, tiered.Options{})
	}, time.Second)
}

// TestConformanceWhileMoving runs the conformance suite on a tiered store whose
// archiver copies everything at once and whose hot tier forgets blobs at
// random (as an expiring cache would): every contract must hold while
// blobs move between tiers.
func TestConformanceWhileMoving(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		hot, cold := memTiers(0)
		forget := &forgetful{Store: hot, cold: cold}
		s := newTiered(t, forget, cold,
			tiered.Options{ArchiveAfter: time.Nanosecond, Interval: time.Millisecond})
		s.Start()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
					forget.forgetArchived()
				}
			}
		}()
		t.Cleanup(func() {
			close(stop)
			<-done
			s.Stop()
			t.Logf("stats %+v, forgotten by the hot tier %d", s.Stats(), forget.forgotten.Load())
		})
		return s
	})
}

// TestCounterWhileMoving increments a counter from several goroutines while
// the archiver copies it and the hot tier keeps forgetting it: reads then
// come from the archive, and CAS must still lose no update. The hot tier
// forgets a version once it has been archived and left alone for a few
// milliseconds, as a TTL above the archiver's delay does (the package's
// condition; TestNoLostUpdateAcrossEviction is what happens when a
// version is evicted at once), so the workers increment in bursts with
// pauses between them.
func TestCounterWhileMoving(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := memTiers(0)
	forget := &forgetful{Store: hot, cold: cold, minAge: 2 * time.Millisecond}
	s := newTiered(t, forget, cold, tiered.Options{ArchiveAfter: time.Nanosecond, Interval: 200 * time.Microsecond})
	s.Start()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
				forget.forgetArchived()
			}
		}
	}()
	const workers, each, bursts = 4, 150, 10
	var conflicts atomic.Int64
	seen := sync.Map{}
	for b := 0; b < bursts; b++ {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each/bursts; i++ {
					v, c, err := storetest.Counter(ctx, s, "n")
					if err != nil {
						t.Error(err)
						return
					}
					conflicts.Add(int64(c))
					if _, dup := seen.LoadOrStore(v, true); dup {
						t.Errorf("value %d written twice: lost update", v)
					}
					time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				}
			}()
		}
		wg.Wait()
		// Let the hot tier forget it, so that the next burst starts from
		// the archive.
		for deadline := time.Now().Add(time.Second); forget.forgotten.Load() <= int64(b) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	close(stop)
	<-done
	s.Stop()
	obj, err := s.Get(ctx, "n")
	if err != nil || string(obj.Data) != strconv.Itoa(workers*each) {
		t.Errorf("final %q, %v; want %d", obj.Data, err, workers*each)
	}
	st := s.Stats()
	t.Logf("%d conflicts retried; stats %+v; forgotten by the hot tier %d times", conflicts.Load(), st, forget.forgotten.Load())
	if st.Restored == 0 || forget.forgotten.Load() == 0 {
		t.Error("the counter never moved between tiers: the test proved nothing")
	}
}

// forgetful is a hot tier that can drop blobs already archived with the
// same tiered version, atomically with respect to its other operations
// (a stand-in for Redis expiring keys long after they were archived).
type forgetful struct {
	mu sync.Mutex
	store.Store
	cold      store.Store
	forgotten atomic.Int64
	// minAge, when set, is how long a blob must have stayed as it is
	// before it is forgotten (since forgetArchived first saw it).
	minAge time.Duration
	seen   map[string]seenBlob
}

// seenBlob is a hot blob as forgetArchived first saw it.
type seenBlob struct {
	data string
	at   time.Time
}

func (f *forgetful) Get(ctx context.Context, id string) (store.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Store.Get(ctx, id)
}

func (f *forgetful) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.Store.Put(ctx, id, data, cond)
}

func (f *forgetful) forgetArchived() {
	ctx := context.Background()
	list, _ := f.Store.List(ctx)
	for _, info := range list {
		if rand.IntN(3) != 0 {
			continue
		}
		f.mu.Lock()
		hot, err1 := f.Store.Get(ctx, info.ID)
		cold, err2 := f.cold.Get(ctx, info.ID)
		if f.minAge > 0 && err1 == nil {
			if f.seen == nil {
				f.seen = map[string]seenBlob{}
			}
			if s, ok := f.seen[info.ID]; !ok || s.data != string(hot.Data) {
				f.seen[info.ID] = seenBlob{string(hot.Data), time.Now()}
			}
			if time.Since(f.seen[info.ID].at) < f.minAge {
				f.mu.Unlock()
				continue
			}
		}
		if err1 == nil && err2 == nil && string(hot.Data) == string(cold.Data) {
			_ = f.Store.Delete(ctx, info.ID)
			f.forgotten.Add(1)
		}
		f.mu.Unlock()
	}
}

func TestArchiveAndRestore(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := memTiers(0)
	s := newTiered(t, hot, cold, tiered.Options{ArchiveAfter: 50 * time.Millisecond})
	v1, err := s.Put(ctx, "u/1", []byte("one"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Source != "hot" {
		t.Errorf("Put Source %q", v1.Source)
	}
	if n, err := s.ArchiveOnce(ctx); n != 0 || err != nil {
		t.Errorf("fresh blob archived: %d, %v", n, err)
	}
	// A lease (a claim held on another entry) stays in the hot tier.
	if _, err := s.Put(ctx, "u/1"+store.LeaseSuffix, []byte("held"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if n, err := s.ArchiveOnce(ctx); n != 1 || err != nil {
		t.Fatalf("ArchiveOnce = %d, %v; want 1 (the lease left out)", n, err)
	}
	if _, err := cold.Stat(ctx, "u/1"+store.LeaseSuffix); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a lease was archived: %v", err)
	}
	if n, _ := s.ArchiveOnce(ctx); n != 0 {
		t.Errorf("second pass copied %d again", n)
	}
	// The hot tier forgets it (expiry): reads come from the archive with the
	// same version, and restore it.
	if err := hot.Delete(ctx, "u/1"); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(ctx, "u/1")
	if err != nil || st.Source != "archive" || st.Version != v1.Version {
		t.Fatalf("Stat = %+v, %v; want archive, version %s", st, err, v1.Version)
	}
	if _, err := hot.Stat(ctx, "u/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat restored the blob: %v", err)
	}
	obj, err := s.Get(ctx, "u/1")
	if err != nil || string(obj.Data) != "one" || obj.Info.Source != "archive" || obj.Info.Version != v1.Version {
		t.Fatalf("Get = %q %+v, %v", obj.Data, obj.Info, err)
	}
	if !obj.Info.Created.Equal(v1.Created) || !obj.Info.Modified.Equal(v1.Modified) {
		t.Errorf("times changed across tiers: %+v vs %+v", obj.Info, v1)
	}
	if _, err := hot.Stat(ctx, "u/1"); err != nil {
		t.Errorf("Get did not restore into the hot tier: %v", err)
	}
	if st, _ := s.Stat(ctx, "u/1"); st.Source != "hot" || st.Version != v1.Version {
		t.Errorf("after restore Stat = %+v", st)
	}
	if s.Stats().Restored != 1 || s.Stats().Archived != 1 {
		t.Errorf("Stats %+v", s.Stats())
	}
	// Delete removes both copies.
	if err := s.Delete(ctx, "u/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cold.Stat(ctx, "u/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete left the archived copy: %v", err)
	}
	if _, err := s.Stat(ctx, "u/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stat after Delete: %v", err)
	}
	if _, err := s.Get(ctx, "u/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
}

func TestCASAcrossTiers(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := memTiers(0)
	s := newTiered(t, hot, cold, tiered.Options{ArchiveAfter: time.Nanosecond})
	v1, err := s.Put(ctx, "c", []byte("1"), store.Cond{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveOnce(ctx); err != nil {
		t.Fatal(err)
	}
	_ = hot.Delete(ctx, "c") // only archived now
	// IfAbsent must see the archived blob.
	if _, err := s.Put(ctx, "c", []byte("x"), store.Cond{IfAbsent: true}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("IfAbsent over an archived blob: %v", err)
	}
	// The version read before archiving is still the current one.
	v2, err := s.Put(ctx, "c", []byte("2"), store.Cond{IfVersion: v1.Version})
	if err != nil {
		t.Fatalf("CAS with a version from before archiving: %v", err)
	}
	if !v2.Created.Equal(v1.Created) {
		t.Errorf("Created changed: %v -> %v", v1.Created, v2.Created)
	}
	// The archive still holds v1, but the hot tier wins.
	if _, err := s.Put(ctx, "c", []byte("x"), store.Cond{IfVersion: v1.Version}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CAS with a superseded version: %v", err)
	}
	obj, err := s.Get(ctx, "c")
	if err != nil || string(obj.Data) != "2" || obj.Info.Version != v2.Version {
		t.Fatalf("Get = %q %+v, %v", obj.Data, obj.Info, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Version != v2.Version || list[0].Source != "hot" {
		t.Errorf("List = %+v, %v", list, err)
	}
}

func TestArchiverDoesNotResurrectDeleted(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := memTiers(0)
	s := newTiered(t, hot, cold, tiered.Options{ArchiveAfter: time.Nanosecond, Interval: time.Millisecond})
	s.Start()
	for i := 0; i < 200; i++ {
		id := "d/" + strconv.Itoa(i)
		if _, err := s.Put(ctx, id, []byte("x"), store.Cond{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	s.Stop()
	if list, _ := s.List(ctx); len(list) != 0 {
		t.Errorf("%d deleted blobs came back: %v", len(list), list)
	}
	t.Logf("stats %+v", s.Stats())
}

func TestStartStop(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := memTiers(0)
	s := newTiered(t, hot, cold, tiered.Options{ArchiveAfter: 20 * time.Millisecond, Interval: 10 * time.Millisecond})
	s.Start()
	s.Start() // no-op
	if _, err := s.Put(ctx, "bg", []byte("x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := cold.Stat(ctx, "bg"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background archiver did not archive within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.Stop()
	s.Stop() // no-op
	passes := s.Stats().Passes
	time.Sleep(50 * time.Millisecond)
	if s.Stats().Passes != passes {
		t.Error("archiver still running after Stop")
	}
}

func TestRedisS3ArchiveRestore(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := realTiers(t, 0, 0)
	s := newTiered(t, hot, cold, tiered.Options{ArchiveAfter: time.Nanosecond, Interval: 20 * time.Millisecond})
	data := storetest.RandomBytes(1 << 20)
	v1, err := s.Put(ctx, "real/1", data, store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := cold.Stat(ctx, "real/1"); err == nil && st.Source == "s3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not archived into S3 within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	if err := hot.Delete(ctx, "real/1"); err != nil { // as if Redis expired it
		t.Fatal(err)
	}
	obj, err := s.Get(ctx, "real/1")
	if err != nil || string(obj.Data) != string(data) || obj.Info.Source != "archive" || obj.Info.Version != v1.Version {
		t.Fatalf("Get from archive = %d bytes %+v, %v", len(obj.Data), obj.Info, err)
	}
	if st, err := hot.Stat(ctx, "real/1"); err != nil || st.Source != "redis" {
		t.Errorf("not restored into Redis: %+v, %v", st, err)
	}
	if _, err := s.Put(ctx, "real/1", []byte("next"), store.Cond{IfVersion: v1.Version}); err != nil {
		t.Errorf("CAS after restore: %v", err)
	}
	if err := s.Delete(ctx, "real/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cold.Stat(ctx, "real/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Delete left the S3 copy: %v", err)
	}
}

func TestRedisS3ConcurrentWhileArchiving(t *testing.T) {
	ctx := storetest.Ctx(t)
	hot, cold := realTiers(t, 0, 0)
	s := newTiered(t, hot, cold, tiered.Options{ArchiveAfter: time.Nanosecond, Interval: 5 * time.Millisecond})
	s.Start()
	defer s.Stop()
	const workers, each = 4, 15
	var wg sync.WaitGroup
	var conflicts atomic.Int64
	seen := sync.Map{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v, c, err := storetest.Counter(ctx, s, "shared")
				if err != nil {
					t.Error(err)
					return
				}
				conflicts.Add(int64(c))
				if _, dup := seen.LoadOrStore(v, true); dup {
					t.Errorf("value %d written twice", v)
				}
				time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	obj, err := s.Get(ctx, "shared")
	if err != nil || string(obj.Data) != strconv.Itoa(workers*each) {
		t.Errorf("final %q, %v; want %d", obj.Data, err, workers*each)
	}
	st := s.Stats()
	t.Logf("%d conflicts retried; stats %+v", conflicts.Load(), st)
	if st.Archived == 0 {
		t.Error("nothing was archived while the counter ran: the test proved nothing")
	}
}

// withTiers is a tiered store that keeps its tiers at hand, for planting
// damage.
type withTiers struct {
	*tiered.Store
	hot, cold store.Store
}

// hotDir is the directory of the dirstore hot tier of s.
func hotDir(s store.Store) string { return s.(withTiers).hot.(*dirstore.Store).Dir() }

// sessionFile is the file of id in a dirstore directory.
func sessionFile(dir, id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(dir, hex.EncodeToString(sum[:])+".session")
}

// TestUnreadable: a damaged entry in either tier (one the tier itself
// cannot read, or a blob that is not a tiered-store envelope) is skipped
// and reported by List; the other blobs are listed.
func TestUnreadable(t *testing.T) {
	notEnvelope := func(cold bool) func(t *testing.T, s store.Store) string {
		return func(t *testing.T, s store.Store) string {
			tier := s.(withTiers).hot
			if cold {
				tier = s.(withTiers).cold
			}
			if _, err := tier.Put(storetest.Ctx(t), "raw", []byte("written by another kind of store"), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			return "raw"
		}
	}
	storetest.RunUnreadable(t, func(t *testing.T) store.Store {
		hot, cold := memTiers(0)
		return withTiers{newTiered(t, hot, cold, tiered.Options{}), hot, cold}
	}, []storetest.Damage{
		{Name: "NotAnEnvelopeHot", Plant: notEnvelope(false)},
		{Name: "NotAnEnvelopeArchive", Plant: notEnvelope(true)},
	})
	storetest.RunUnreadable(t, func(t *testing.T) store.Store {
		hot, err := dirstore.Open(t.TempDir(), dirstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cold := memstore.New(memstore.Options{})
		return withTiers{newTiered(t, hot, cold, tiered.Options{}), hot, cold}
	}, []storetest.Damage{
		{Name: "GarbageFileInHot", Plant: func(t *testing.T, s store.Store) string {
			if err := os.WriteFile(sessionFile(hotDir(s), "junk"), []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{Name: "TruncatedFileInHot", Plant: func(t *testing.T, s store.Store) string {
			if _, err := s.Put(storetest.Ctx(t), "cut", []byte("some state"), store.Cond{}); err != nil {
				t.Fatal(err)
			}
			path := sessionFile(hotDir(s), "cut")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()-3); err != nil {
				t.Fatal(err)
			}
			return "cut"
		}},
	})
}

// TestArchiverSkipsUnreadable: a corrupt file in a directory hot tier does
// not stop the archiver: it archives every other blob, and counts and logs
// the damaged one.
func TestArchiverSkipsUnreadable(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	hot, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cold := memstore.New(memstore.Options{})
	var (
		mu   sync.Mutex
		logs []string
	)
	s, err := tiered.New(tiered.Options{Hot: hot, Cold: cold, ArchiveAfter: time.Nanosecond,
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprintf(format, args...))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ids := []string{"a", "b/1", "c"}
	for _, id := range ids {
		if _, err := s.Put(ctx, id, []byte("state of "+id), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	junk := sessionFile(dir, "junk")
	if err := os.WriteFile(junk, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := s.ArchiveOnce(ctx)
	if n != len(ids) || !errors.Is(err, store.ErrUnreadable) {
		t.Errorf("ArchiveOnce = %d, %v; want %d archived and the corrupt file reported", n, err, len(ids))
	}
	for _, id := range ids {
		if _, err := cold.Stat(ctx, id); err != nil {
			t.Errorf("%s not archived: %v", id, err)
		}
	}
	if st := s.Stats(); st.Archived != len(ids) || st.ArchiveErrors != 1 {
		t.Errorf("Stats %+v; want %d archived, 1 error", st, len(ids))
	}
	mu.Lock()
	t.Logf("logged: %q", logs)
	if len(logs) != 1 || !strings.Contains(logs[0], junk) {
		t.Errorf("logged %q; want one line naming %s", logs, junk)
	}
	mu.Unlock()
}

func TestNew(t *testing.T) {
	if _, err := tiered.New(tiered.Options{}); err == nil {
		t.Error("New without tiers succeeded")
	}
}

func BenchmarkSaveLoad(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		hot, cold := memTiers(0)
		storetest.Bench(b, newTiered(b, hot, cold, tiered.Options{}))
	})
	b.Run("redis+s3", func(b *testing.B) {
		hot, cold := realTiers(b, 0, 0)
		storetest.Bench(b, newTiered(b, hot, cold, tiered.Options{}))
	})
}

// hookedHot is a hot tier that runs a function, once, before the next
// write into an absent blob (IfAbsent): the moment another process can
// slip in.
type hookedHot struct {
	store.Store
	mu   sync.Mutex
	hook func()
}

func (h *hookedHot) Put(ctx context.Context, id string, data []byte, cond store.Cond) (store.Info, error) {
	h.mu.Lock()
	hook := h.hook
	if cond.IfAbsent {
		h.hook = nil
	}
	h.mu.Unlock()
	if hook != nil && cond.IfAbsent {
		hook()
	}
	return h.Store.Put(ctx, id, data, cond)
}

// archiveAndEvict has another process write value over version base of
// id, archive it, and the hot tier then evict it: the hot tier is absent
// again, as it was when the first process read the archive.
func archiveAndEvict(t *testing.T, other *tiered.Store, hot store.Store, id, base, value string) {
	t.Helper()
	ctx := storetest.Ctx(t)
	if _, err := other.Put(ctx, id, []byte(value), store.Cond{IfVersion: base}); err != nil {
		t.Fatal(err)
	}
	if n, err := other.ArchiveOnce(ctx); n != 1 || err != nil {
		t.Fatalf("ArchiveOnce = %d, %v", n, err)
	}
	if err := hot.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestNoLostUpdateAcrossEviction: a process reads version 1 from the
// archive (the hot tier had evicted it); before it writes, another
// process writes version 2, which is archived and evicted in turn. The
// hot tier is absent both times, so its IfAbsent cannot tell: the tiered
// store must, or version 2 is lost. A conditional Put then fails with
// ErrConflict and a restoring Get serves version 2.
func TestNoLostUpdateAcrossEviction(t *testing.T) {
	ctx := storetest.Ctx(t)
	for _, op := range []string{"put", "get"} {
		t.Run(op, func(t *testing.T) {
			raw, cold := memTiers(0)
			hot := &hookedHot{Store: raw}
			opts := tiered.Options{ArchiveAfter: time.Nanosecond}
			s := newTiered(t, hot, cold, opts)
			other := newTiered(t, raw, cold, opts)
			v1, err := s.Put(ctx, "n", []byte("1"), store.Cond{})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := s.ArchiveOnce(ctx); n != 1 || err != nil {
				t.Fatalf("ArchiveOnce = %d, %v", n, err)
			}
			if err := raw.Delete(ctx, "n"); err != nil {
				t.Fatal(err)
			}
			hot.hook = func() { archiveAndEvict(t, other, raw, "n", v1.Version, "2") }
			if op == "put" {
				_, err := s.Put(ctx, "n", []byte("1+1"), store.Cond{IfVersion: v1.Version})
				if !errors.Is(err, store.ErrConflict) {
					t.Fatalf("Put over a version archived and evicted meanwhile: %v; want ErrConflict", err)
				}
				obj, err := s.Get(ctx, "n")
				if err != nil || string(obj.Data) != "2" {
					t.Fatalf("Get = %q, %v; want the other process's 2", obj.Data, err)
				}
				return
			}
			obj, err := s.Get(ctx, "n")
			if err != nil || string(obj.Data) != "2" {
				t.Fatalf("Get restoring a version superseded meanwhile = %q, %v; want 2", obj.Data, err)
			}
			if hobj, err := raw.Get(ctx, "n"); err != nil || !strings.HasSuffix(string(hobj.Data), "2") {
				t.Fatalf("the hot tier holds %q, %v; want version 2", hobj.Data, err)
			}
		})
	}
}
