package s3store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/storetest"
)

func options(t testing.TB, ttl time.Duration) s3store.Options {
	env := storetest.S3(t)
	return s3store.Options{
		Endpoint:  env.Endpoint,
		Bucket:    env.Bucket,
		AccessKey: env.AccessKey,
		SecretKey: env.SecretKey,
		Prefix:    storetest.UniquePrefix(t),
		TTL:       ttl,
	}
}

// open opens a store on the test server under a prefix of its own and
// removes its objects when the test ends.
func open(t testing.TB, opts s3store.Options) *s3store.Store {
	t.Helper()
	s, err := s3store.New(storetest.Ctx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		removeAll(s)
		_ = s.Close()
	})
	return s
}

func removeAll(s *s3store.Store) {
	ctx := context.Background()
	for obj := range s.Client().ListObjects(ctx, s.Bucket(), minio.ListObjectsOptions{Prefix: s.Prefix(), Recursive: true}) {
		if obj.Err == nil {
			_ = s.Client().RemoveObject(ctx, s.Bucket(), obj.Key, minio.RemoveObjectOptions{})
		}
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, options(t, 0)) })
	storetest.RunTTL(t, func(t *testing.T, ttl time.Duration) store.Store { return open(t, options(t, ttl)) }, time.Second)
}

func TestKeys(t *testing.T) {
	s := open(t, options(t, 0))
	p := s.Prefix()
	for id, want := range map[string]string{
		"a":           "a=",
		"users/42/s1": "users/42/s1=",
		"a//b":        "a/~/b=",
		"/x":          "~/x=",
		"x/":          "x/=",
		"/":           "~/=",
	} {
		if got := s.Key(id); got != p+want {
			t.Errorf("Key(%q) = %q, want %q", id, got, p+want)
		}
	}
}

func TestDefaultsAndMetadata(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := open(t, options(t, 0))
	info, err := s.Put(ctx, "a/b", []byte("data"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Source != "s3" {
		t.Errorf("Source %q", info.Source)
	}
	if d := info.Expires.Sub(info.Modified); d != s3store.DefaultTTL {
		t.Errorf("default TTL %v, want %v", d, s3store.DefaultTTL)
	}
	oi, err := s.Client().StatObject(ctx, s.Bucket(), s.Key("a/b"), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// One metadata value: format, version, created, modified, expires,
	// sha256, md5 (the ETag of the body).
	fields := strings.Split(oi.Metadata.Get("X-Amz-Meta-Monty-Info"), ";")
	if len(fields) != 7 || fields[0] != "v1" || fields[1] != info.Version || fields[5] != store.Checksum([]byte("data")) ||
		fields[6] != "8d777f385d3dfec8815d20f7496026dc" || oi.Size != 4 {
		t.Errorf("object metadata %v size %d", oi.Metadata, oi.Size)
	}
	// Objects under the prefix that the store did not write are skipped by List.
	if _, err := s.Client().PutObject(ctx, s.Bucket(), s.Prefix()+"stray", strings.NewReader("x"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "a/b" {
		t.Errorf("List = %v, %v", list, err)
	}
}

// TestInconsistentObjects writes objects whose metadata does not describe
// their body, as a torn read would show them: a body that does not match its
// checksum is never returned, and a HEAD whose ETag is not the recorded MD5
// is trusted only once two reads agree (servers whose ETags are not MD5s).
func TestInconsistentObjects(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := open(t, options(t, 0))
	good, err := s.Put(ctx, "good", []byte("data"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	oi, err := s.Client().StatObject(ctx, s.Bucket(), s.Key("good"), minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := oi.Metadata.Get("X-Amz-Meta-Monty-Info")
	// Same metadata, another body: the checksum does not match.
	if _, err := s.Client().PutObject(ctx, s.Bucket(), s.Key("bad"), strings.NewReader("DATA"), 4,
		minio.PutObjectOptions{UserMetadata: map[string]string{"Monty-Info": meta}}); err != nil {
		t.Fatal(err)
	}
	if obj, err := s.Get(ctx, "bad"); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Get of a body that does not match its metadata = %q, %v", obj.Data, err)
	}
	// Stat (a HEAD) cannot see the body; its ETag is not the recorded MD5,
	// but two reads agree, so it is taken as it is.
	st, err := s.Stat(ctx, "bad")
	if err != nil || st.Version != good.Version {
		t.Errorf("Stat = %+v, %v", st, err)
	}
	// A conditional Put against it uses the ETag the server has.
	if _, err := s.Put(ctx, "bad", []byte("new"), store.Cond{IfVersion: good.Version}); err != nil {
		t.Errorf("Put over a stable object: %v", err)
	}
	mustData(t, s, "bad", "new")
}

func mustData(t *testing.T, s *s3store.Store, id, want string) {
	t.Helper()
	obj, err := s.Get(storetest.Ctx(t), id)
	if err != nil || string(obj.Data) != want {
		t.Fatalf("Get(%q) = %q, %v; want %q", id, obj.Data, err, want)
	}
}

func TestExpiredObjectsAreDeletedLazily(t *testing.T) {
	ctx := storetest.Ctx(t)
	s := open(t, options(t, 300*time.Millisecond))
	if _, err := s.Put(ctx, "old", []byte("x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := s.Get(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of expired: %v", err)
	}
	if _, err := s.Client().StatObject(ctx, s.Bucket(), s.Key("old"), minio.StatObjectOptions{}); minio.ToErrorResponse(err).StatusCode != 404 {
		t.Errorf("expired object still in the bucket after Get: %v", err)
	}
}

func TestConditionalWritesEnforcedByServer(t *testing.T) {
	// The store's CAS relies on the server refusing a PUT whose If-Match
	// does not hold; check the server itself.
	ctx := storetest.Ctx(t)
	s := open(t, options(t, 0))
	key := s.Prefix() + "raw"
	c := s.Client()
	up, err := c.PutObject(ctx, s.Bucket(), key, strings.NewReader("one"), 3, minio.PutObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var opts minio.PutObjectOptions
	opts.SetMatchETagExcept("*")
	if _, err := c.PutObject(ctx, s.Bucket(), key, strings.NewReader("two"), 3, opts); err == nil {
		t.Error("If-None-Match: * PUT over an existing object succeeded")
	}
	opts = minio.PutObjectOptions{}
	opts.SetMatchETag("0123456789abcdef0123456789abcdef")
	if _, err := c.PutObject(ctx, s.Bucket(), key, strings.NewReader("two"), 3, opts); err == nil {
		t.Error("If-Match PUT with a wrong ETag succeeded")
	}
	opts = minio.PutObjectOptions{}
	opts.SetMatchETag(up.ETag)
	if _, err := c.PutObject(ctx, s.Bucket(), key, strings.NewReader("two"), 3, opts); err != nil {
		t.Errorf("If-Match PUT with the right ETag: %v", err)
	}
}

func TestCreatesBucket(t *testing.T) {
	opts := options(t, 0)
	opts.Bucket = "monty-new-" + strings.ToLower(strings.Trim(strings.ReplaceAll(storetest.UniquePrefix(t)[len("test/"):], "/", "-"), "-"))
	opts.Bucket = opts.Bucket[:min(len(opts.Bucket), 63)]
	opts.Bucket = strings.TrimRight(strings.ReplaceAll(opts.Bucket, "_", "-"), "-")
	s := open(t, opts)
	t.Cleanup(func() { _ = s.Client().RemoveBucket(context.Background(), opts.Bucket) })
	ctx := storetest.Ctx(t)
	if _, err := s.Put(ctx, "x", []byte("x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3store.New(ctx, opts); err != nil { // existing bucket: fine
		t.Fatal(err)
	}
}

func TestUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := options(t, 0)
	opts.Endpoint = "127.0.0.1:1"
	if _, err := s3store.New(ctx, opts); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("New on a closed port: %v", err)
	}
	opts = options(t, 0)
	opts.SecretKey = "wrong"
	if _, err := s3store.New(ctx, opts); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("New with a wrong secret: %v", err)
	}
}

// TestUnreadable: objects under a key of this store whose metadata is
// missing or garbled are skipped and reported by List, without hiding the
// others.
func TestUnreadable(t *testing.T) {
	// plant writes "data" under id's key with the given monty metadata
	// (none when empty).
	plant := func(id, meta string) func(t *testing.T, s store.Store) string {
		return func(t *testing.T, s store.Store) string {
			ss := s.(*s3store.Store)
			var opts minio.PutObjectOptions
			if meta != "" {
				opts.UserMetadata = map[string]string{"Monty-Info": meta}
			}
			if _, err := ss.Client().PutObject(storetest.Ctx(t), ss.Bucket(), ss.Key(id), strings.NewReader("data"), 4, opts); err != nil {
				t.Fatal(err)
			}
			return id
		}
	}
	sha := store.Checksum([]byte("data"))
	const md5hex = "8d777f385d3dfec8815d20f7496026dc"
	storetest.RunUnreadable(t, func(t *testing.T) store.Store { return open(t, options(t, 0)) }, []storetest.Damage{
		{Name: "NoMetadata", Plant: plant("foreign/upload", "")},
		{Name: "GarbledMetadata", Plant: plant("garbled", "v1;only;three")},
		{Name: "OtherFormat", Plant: plant("v2", "v2;abc;1;2;0;"+sha+";"+md5hex)},
		{Name: "GarbledTimes", Plant: plant("times", "v1;abc;1;soon;0;"+sha+";"+md5hex)},
		{Name: "GarbledChecksum", Plant: plant("checksum", "v1;abc;1;2;0;nope;"+md5hex)},
	})
}

// TestListOutage: a server that stops answering fails List as a whole;
// it is no skipped entry.
func TestListOutage(t *testing.T) {
	ctx := storetest.Ctx(t)
	opts := options(t, 0)
	addr, stop := proxy(t, opts.Endpoint)
	opts.Endpoint = addr
	retries := minio.MaxRetry
	minio.MaxRetry = 1 // read when the client is made: fail fast once the server is gone
	s := open(t, opts)
	minio.MaxRetry = retries
	if _, err := s.Put(ctx, "x", []byte("x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if list, err := s.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("List through the proxy = %v, %v", list, err)
	}
	stop()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := s.List(ctx)
	if _, fatal := store.SplitListError(err); !errors.Is(fatal, store.ErrUnavailable) || errors.Is(err, store.ErrUnreadable) || list != nil {
		t.Errorf("List with the server gone = %v, %v", list, err)
	}
}

// proxy forwards TCP connections from a loopback port to target until
// stop, which also cuts the open connections.
func proxy(t *testing.T, target string) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			track(c)
			track(up)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = ln.Close()
			mu.Lock()
			for _, c := range conns {
				_ = c.Close()
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

func BenchmarkSaveLoad(b *testing.B) {
	storetest.Bench(b, open(b, options(b, 0)))
}

// TestConditionalPutAnswerLost: the answer to a conditional Put that
// landed is lost (the connection drops), the client library sends it
// again, and the retry meets the object the first one stored: the Put
// succeeds, as it did, instead of reporting a conflict with itself.
func TestConditionalPutAnswerLost(t *testing.T) {
	ctx := storetest.Ctx(t)
	opts := options(t, 0)
	target, err := url.Parse("http://" + opts.Endpoint)
	require.NoError(t, err)
	var dropped atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" && dropped.Add(1) == 1 {
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r) // it lands...
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			panic(http.ErrAbortHandler) // ...and its answer is lost
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	opts.Endpoint = strings.TrimPrefix(srv.URL, "http://")
	s := open(t, opts)
	info, err := s.Put(ctx, "once", []byte("data"), store.Cond{IfAbsent: true})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, dropped.Load(), int32(2), "the client library sent it again")
	got, err := s.Get(ctx, "once")
	require.NoError(t, err)
	assert.Equal(t, info.Version, got.Info.Version)
	// A true conflict is still one.
	_, err = s.Put(ctx, "once", []byte("other"), store.Cond{IfAbsent: true})
	assert.ErrorIs(t, err, store.ErrConflict)
}
