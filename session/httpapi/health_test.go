package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/storetest"
	"github.com/monty-go/monty/session/store/tiered"
)

// storeHealth gets /health/store and decodes the answer.
func storeHealth(t *testing.T, c *client) (int, httpapi.StoreHealth, http.Header) {
	t.Helper()
	status, header, data := c.do("GET", "/health/store", nil)
	var h httpapi.StoreHealth
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatalf("/health/store: %d %s", status, data)
	}
	return status, h, header
}

// checks renders the checks as "name=status" for comparisons.
func checks(h httpapi.StoreHealth) string {
	var parts []string
	for _, c := range h.Checks {
		parts = append(parts, c.Name+"="+c.Status)
	}
	return strings.Join(parts, " ")
}

// TestHealthLiveness: /health needs no key, does not touch the store, and
// stays 200 while the server drains.
func TestHealthLiveness(t *testing.T) {
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: downStore{}}, APIKeys: []string{"key-aaaaaaaa"}})
	c := srv.client("")
	status, _, data := c.do("GET", "/health", nil)
	if status != http.StatusOK || strings.TrimSpace(string(data)) != `{"status":"ok"}` {
		t.Fatalf("/health: %d %s", status, data)
	}
	if err := srv.h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, _, data = c.do("GET", "/health", nil)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(data), "shutting_down") {
		t.Fatalf("/health while draining: %d %s", status, data)
	}
	status, _, data = c.do("POST", "/health", nil)
	wantError(t, "POST /health", status, data, http.StatusMethodNotAllowed, "method_not_allowed")
}

// TestHealthStoreNeedsKey: the store check writes to the store, so it
// takes an API key when keys are configured.
func TestHealthStoreNeedsKey(t *testing.T) {
	srv := newServer(t, httpapi.Options{APIKeys: []string{"key-aaaaaaaa"}})
	status, _, data := srv.client("").do("GET", "/health/store", nil)
	wantError(t, "/health/store without a key", status, data, http.StatusUnauthorized, "unauthorized")
	status, h, _ := storeHealth(t, srv.client("key-aaaaaaaa"))
	if status != http.StatusOK || h.Status != "ok" || h.Store != "memstore" || checks(h) != "write=ok read=ok delete=ok" {
		t.Fatalf("/health/store: %d %+v", status, h)
	}
	if n := srv.store.(*memstore.Store).Len(); n != 0 {
		t.Errorf("the probe left %d blobs behind", n)
	}
}

// TestHealthStoreDirectory: a directory store that works is 200; one whose
// directory is gone is 503 with the failing step.
func TestHealthStoreDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	st, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := newServer(t, httpapi.Options{Session: session.Options{Store: st}}).client("")
	if status, h, _ := storeHealth(t, c); status != http.StatusOK || h.Store != "dirstore" || checks(h) != "write=ok read=ok delete=ok" {
		t.Fatalf("/health/store: %d %+v", status, h)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("the probe left files behind: %v", entries)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	status, h, header := storeHealth(t, c)
	if status != http.StatusServiceUnavailable || h.Status != "unavailable" || checks(h) != "write=failed read=skipped delete=failed" ||
		h.Checks[0].Error != "store_unavailable" || h.Checks[0].Message == "" || header.Get("Retry-After") == "" {
		t.Fatalf("/health/store without its directory: %d %+v", status, h)
	}
}

// TestHealthStoreTimeout: a store that does not answer fails the check
// within the timeout.
func TestHealthStoreTimeout(t *testing.T) {
	c := newServer(t, httpapi.Options{Session: session.Options{Store: hangingStore{memstore.New(memstore.Options{})}}, HealthTimeout: 50 * time.Millisecond}).client("")
	start := time.Now()
	status, h, _ := storeHealth(t, c)
	if status != http.StatusServiceUnavailable || h.Checks[0].Error != "timeout" {
		t.Fatalf("/health/store of a hanging store: %d %+v", status, h)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the check took %v", d)
	}
}

// TestHealthStoreHidesPasswords: a store error naming a URL with
// credentials is not shown to the client (the log has it, password
// blanked).
func TestHealthStoreHidesPasswords(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	c := newServer(t, httpapi.Options{
		Session: session.Options{Store: downStore{}},
		Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil)),
	}).client("")
	status, h, _ := storeHealth(t, c)
	body, _ := json.Marshal(h)
	if status != http.StatusServiceUnavailable || strings.Contains(string(body), "hunter2") || strings.Contains(string(body), "db:6379") {
		t.Fatalf("/health/store: %d %s", status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "redis://***@db:6379") || strings.Contains(logs.String(), "hunter2") {
		t.Fatalf("log: %s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestHealthStoreRealBackends runs the check against Redis, S3 and a tiered
// pair of them, and against a Redis store whose connection is gone.
func TestHealthStoreRealBackends(t *testing.T) {
	ctx := context.Background()
	prefix := storetest.UniquePrefix(t)
	hot, err := redisstore.New(ctx, redisstore.Options{URL: storetest.RedisURL(t), Prefix: "monty-" + prefix + "/"})
	if err != nil {
		t.Fatal(err)
	}
	env := storetest.S3(t)
	cold, err := s3store.New(ctx, s3store.Options{Endpoint: env.Endpoint, Bucket: env.Bucket, AccessKey: env.AccessKey, SecretKey: env.SecretKey, Prefix: prefix + "/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cold.Close() })
	for _, c := range []struct {
		st         store.Store
		kind, want string
	}{
		{hot, "redisstore", "write=ok read=ok delete=ok"},
		{cold, "s3store", "write=ok read=ok delete=ok"},
	} {
		status, h, _ := storeHealth(t, newServer(t, httpapi.Options{Session: session.Options{Store: c.st}}).client(""))
		if status != http.StatusOK || h.Store != c.kind || checks(h) != c.want {
			t.Errorf("%s: %d %+v", c.kind, status, h)
		}
	}
	ts, err := tiered.New(tiered.Options{Hot: hot, Cold: cold})
	if err != nil {
		t.Fatal(err)
	}
	status, h, _ := storeHealth(t, newServer(t, httpapi.Options{Session: session.Options{Store: ts}}).client(""))
	if status != http.StatusOK || h.Store != "tiered" || checks(h) != "write=ok read=ok delete=ok hot=ok archive=ok" {
		t.Fatalf("tiered: %d %+v", status, h)
	}
	// Redis gone (the client closed): 503, the store's error named.
	if err := hot.Close(); err != nil {
		t.Fatal(err)
	}
	status, h, _ = storeHealth(t, newServer(t, httpapi.Options{Session: session.Options{Store: ts}}).client(""))
	if status != http.StatusServiceUnavailable || checks(h) != "write=failed read=skipped delete=failed hot=failed archive=ok" {
		t.Fatalf("tiered with Redis gone: %d %+v", status, h)
	}
}

// downStore fails every call with an error naming a URL with a password.
type downStore struct{ store.Store }

var errDown = fmt.Errorf("%w: dial redis://admin:hunter2@db:6379/0: connection refused", store.ErrUnavailable)

func (downStore) Get(context.Context, string) (store.Object, error) { return store.Object{}, errDown }
func (downStore) Stat(context.Context, string) (store.Info, error)  { return store.Info{}, errDown }
func (downStore) Put(context.Context, string, []byte, store.Cond) (store.Info, error) {
	return store.Info{}, errDown
}
func (downStore) Delete(context.Context, string) error { return errDown }

// hangingStore's Puts wait for their context to end.
type hangingStore struct{ store.Store }

func (hangingStore) Put(ctx context.Context, _ string, _ []byte, _ store.Cond) (store.Info, error) {
	<-ctx.Done()
	return store.Info{}, errors.Join(store.ErrUnavailable, ctx.Err())
}
