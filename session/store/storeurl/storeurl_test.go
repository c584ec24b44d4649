package storeurl_test

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/memstore"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/storetest"
	"github.com/monty-go/monty/session/store/storeurl"
	"github.com/monty-go/monty/session/store/tiered"
)

func open(t *testing.T, spec string) store.Store {
	t.Helper()
	st, err := storeurl.Open(storetest.Ctx(t), spec)
	if err != nil {
		t.Fatalf("Open(%q): %v", spec, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// roundTrip checks that st keeps a blob and reports source.
func roundTrip(t *testing.T, st store.Store, source string) {
	t.Helper()
	ctx := storetest.Ctx(t)
	info, err := st.Put(ctx, "url/1", []byte("state"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := st.Get(ctx, "url/1")
	if err != nil || string(obj.Data) != "state" || obj.Info.Version != info.Version {
		t.Fatalf("Get = %q, %+v, %v", obj.Data, obj.Info, err)
	}
	if obj.Info.Source != source {
		t.Errorf("Source = %q, want %q", obj.Info.Source, source)
	}
	if err := st.Delete(ctx, "url/1"); err != nil {
		t.Fatal(err)
	}
}

func s3URL(t *testing.T, query string) string {
	env := storetest.S3(t)
	u := url.URL{Scheme: "s3", User: url.UserPassword(env.AccessKey, env.SecretKey), Host: env.Endpoint,
		Path: "/" + env.Bucket, RawQuery: "prefix=" + url.QueryEscape(storetest.UniquePrefix(t)) + query}
	return u.String()
}

func redisURL(t *testing.T, query string) string {
	return storetest.RedisURL(t) + "?prefix=" + url.QueryEscape("monty-"+storetest.UniquePrefix(t)) + query
}

func TestBackends(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir)
	if _, ok := st.(*dirstore.Store); !ok {
		t.Fatalf("directory spec opened %T", st)
	}
	roundTrip(t, st, "dir")
	roundTrip(t, open(t, "file://"+filepath.ToSlash(filepath.Join(dir, "f"))), "dir")
	if _, ok := open(t, "mem:").(*memstore.Store); !ok {
		t.Fatal("mem: did not open a memstore")
	}
	roundTrip(t, open(t, "mem:"), "memory")

	rs := open(t, redisURL(t, "&ttl=90s"))
	r, ok := rs.(*redisstore.Store)
	if !ok || !strings.HasPrefix(r.Prefix(), "monty-test/") {
		t.Fatalf("redis spec opened %T with prefix %q", rs, r.Prefix())
	}
	info, err := rs.Put(storetest.Ctx(t), "ttl", []byte("x"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	if d := info.Expires.Sub(info.Modified); d < 89*time.Second || d > 91*time.Second {
		t.Errorf("redis ttl=90s gave a lifetime of %v", d)
	}
	roundTrip(t, rs, "redis")

	ss := open(t, s3URL(t, ""))
	if _, ok := ss.(*s3store.Store); !ok {
		t.Fatalf("s3 spec opened %T", ss)
	}
	roundTrip(t, ss, "s3")

	ts := open(t, redisURL(t, "&archive_after=1h")+","+s3URL(t, "&ttl=never"))
	if _, ok := ts.(*tiered.Store); !ok {
		t.Fatalf("tiered spec opened %T", ts)
	}
	roundTrip(t, ts, "hot")
}

func TestS3CredentialsFromEnvironment(t *testing.T) {
	env := storetest.S3(t)
	t.Setenv("AWS_ACCESS_KEY_ID", env.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", env.SecretKey)
	roundTrip(t, open(t, "s3://"+env.Endpoint+"/"+env.Bucket+"?prefix="+url.QueryEscape(storetest.UniquePrefix(t))), "s3")
}

func TestBadSpecs(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	for _, spec := range []string{
		"",
		"   ",
		"mem:?ttl=soon",
		"mem:?ttl=-5s",
		"mem:?colour=blue",
		"mem:?archive_after=1h", // only for the hot half of a pair
		"s3://host:9000",
		"s3://host:9000/bucket/sub",
		"s3://host:9000/bucket",        // no credentials anywhere
		"s3://k:s@host:9000/b?ssl=yes", // not a bool
		"file://elsewhere/dir",
		"mem:?archive_after=1h,mem:?colour=blue",
		"mem:?archive_after=forever,mem:",
		"mem:,",
		",mem:",
		"mem:,mem:,mem:",
	} {
		st, err := storeurl.Open(storetest.Ctx(t), spec)
		if !errors.Is(err, storeurl.ErrBadSpec) {
			t.Errorf("Open(%q) = %v, %v; want ErrBadSpec", spec, st, err)
		}
	}
}

func TestErrorsHidePasswords(t *testing.T) {
	_, err := storeurl.Open(storetest.Ctx(t), "s3://key:topsecret@host:9000/b?ssl=maybe")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Fatalf("error %v shows the password", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	_, err := storeurl.Open(storetest.Ctx(t), "redis://127.0.0.1:1/0")
	if err == nil || errors.Is(err, storeurl.ErrBadSpec) {
		t.Fatalf("Open of an unreachable Redis = %v; want a connection error", err)
	}
}

func TestTieredSpecWithDirectory(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir+",mem:")
	if _, ok := st.(*tiered.Store); !ok {
		t.Fatalf("DIR,mem: opened %T", st)
	}
	roundTrip(t, st, "hot")
	// The hot tier is the directory.
	if _, err := st.Put(storetest.Ctx(t), "k", []byte("v"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	ds, err := dirstore.Open(dir, dirstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if _, err := ds.Stat(storetest.Ctx(t), "k"); err != nil {
		t.Errorf("the blob is not in the directory: %v", err)
	}
}

func TestTieredSpecWithMemory(t *testing.T) {
	st := open(t, "mem:?archive_after=1ms&interval=1ms,mem:")
	ctx := storetest.Ctx(t)
	if _, err := st.Put(ctx, "a", []byte("1"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	// The archiver was started by Open: the blob reaches the archive.
	ts := st.(*tiered.Store)
	deadline := time.Now().Add(5 * time.Second)
	for ts.Stats().Archived == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("archiver did not run: %+v", ts.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOpenWith: the settings apply whatever the spec names, and may not be
// given twice.
func TestOpenWith(t *testing.T) {
	ctx := storetest.Ctx(t)
	lifetime := func(t *testing.T, st store.Store) time.Duration {
		t.Helper()
		info, err := st.Put(ctx, "ttl", []byte("x"), store.Cond{})
		if err != nil {
			t.Fatal(err)
		}
		if info.Expires.IsZero() {
			return 0
		}
		return info.Expires.Sub(info.Modified)
	}
	openWith := func(t *testing.T, spec string, o storeurl.Options) store.Store {
		t.Helper()
		st, err := storeurl.OpenWith(ctx, spec, o)
		if err != nil {
			t.Fatalf("OpenWith(%q): %v", spec, err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	// A plain directory has no url to carry ttl=.
	if d := lifetime(t, openWith(t, t.TempDir(), storeurl.Options{TTL: time.Hour})); d != time.Hour {
		t.Errorf("directory with TTL 1h: lifetime %v", d)
	}
	if d := lifetime(t, openWith(t, redisURL(t, ""), storeurl.Options{TTL: 90 * time.Second})); d != 90*time.Second {
		t.Errorf("redis with TTL 90s: lifetime %v", d)
	}
	if d := lifetime(t, openWith(t, redisURL(t, ""), storeurl.Options{TTL: -1})); d != 0 {
		t.Errorf("redis with TTL never: lifetime %v", d)
	}
	if d := lifetime(t, openWith(t, redisURL(t, ""), storeurl.Options{})); d != redisstore.DefaultTTL {
		t.Errorf("redis without TTL: lifetime %v, want the default", d)
	}

	// A tiered pair: TTL to HOT, ArchiveTTL to COLD, the archiver's timing.
	ts := openWith(t, redisURL(t, "")+","+s3URL(t, ""), storeurl.Options{
		TTL: 3 * time.Hour, ArchiveTTL: 48 * time.Hour, ArchiveAfter: 20 * time.Minute, ArchiveInterval: 2 * time.Minute,
	}).(*tiered.Store)
	hot, cold := ts.Tiers()
	if d := lifetime(t, hot); d != 3*time.Hour {
		t.Errorf("hot tier lifetime %v, want 3h", d)
	}
	if d := lifetime(t, cold); d != 48*time.Hour {
		t.Errorf("cold tier lifetime %v, want 48h", d)
	}
	if after, interval := ts.ArchiveAfter(); after != 20*time.Minute || interval != 2*time.Minute {
		t.Errorf("archive after %v every %v; want 20m every 2m", after, interval)
	}

	for name, c := range map[string]struct {
		spec string
		o    storeurl.Options
	}{
		"ttl twice":                {"mem:?ttl=1h", storeurl.Options{TTL: time.Hour}},
		"archive ttl on one store": {"mem:", storeurl.Options{ArchiveTTL: time.Hour}},
		"archive after one store":  {t.TempDir(), storeurl.Options{ArchiveAfter: time.Hour}},
		"interval on one store":    {"mem:", storeurl.Options{ArchiveInterval: time.Minute}},
		"archive ttl twice":        {"mem:,mem:?ttl=2h", storeurl.Options{ArchiveTTL: time.Hour}},
		"archive after twice":      {"mem:?archive_after=1h,mem:", storeurl.Options{ArchiveAfter: time.Hour}},
		"negative archive after":   {"mem:,mem:", storeurl.Options{ArchiveAfter: -1}},
	} {
		if st, err := storeurl.OpenWith(ctx, c.spec, c.o); !errors.Is(err, storeurl.ErrBadSpec) {
			t.Errorf("%s: OpenWith(%q, %+v) = %v, %v; want ErrBadSpec", name, c.spec, c.o, st, err)
		}
	}
}

// TestUnknownSchemes: a spec that starts like a URL but is none of the
// accepted forms is refused with an error listing them, and nothing is
// created for it (before, dir:/x made a directory named "dir:").
func TestUnknownSchemes(t *testing.T) {
	t.Chdir(t.TempDir())
	hot := filepath.Join(t.TempDir(), "hot")
	specs := []string{
		"dir:/x",
		"dir:x",
		"Dir:x",
		"file:x",
		"file:/x",
		"redis:localhost",
		"s3:bucket",
		"postgres://user:hunter2@db:5432/monty",
		"HTTP://example.com/x",
		"x-y.z+1:/x",
		"dir:/x,mem:",
		"mem:,dir:/x",
		hot + ",dir:/x", // the HOT directory is not created either
	}
	if goruntime.GOOS != "windows" {
		specs = append(specs, "c:/x", `C:\x`) // a drive letter only on Windows
	}
	for _, spec := range specs {
		st, err := storeurl.Open(storetest.Ctx(t), spec)
		if !errors.Is(err, storeurl.ErrUnknownScheme) || !errors.Is(err, storeurl.ErrBadSpec) {
			t.Errorf("Open(%q) = %v, %v; want ErrUnknownScheme and ErrBadSpec", spec, st, err)
			if st != nil {
				st.Close()
			}
			continue
		}
		for _, form := range []string{"a directory", "./name:x", "file:///path", "mem:", "redis://", "s3://", "HOT,COLD"} {
			if !strings.Contains(err.Error(), form) {
				t.Errorf("Open(%q): the error %q does not list %q", spec, err, form)
			}
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): the error shows the password: %v", spec, err)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("refused specs created %v in the working directory", entries)
	}
	if _, err := os.Stat(hot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused COLD spec left the HOT directory behind: %v", err)
	}
}

// TestPathsWithColons: a colon after a path's first character that is
// not a scheme's (./, a slash before it) keeps a directory a directory;
// mem: takes parameters only; schemes are case-insensitive.
func TestPathsWithColons(t *testing.T) {
	t.Chdir(t.TempDir())
	for spec, dir := range map[string]string{
		"./dir:x":    "dir:x",
		"sub/dir:y":  filepath.Join("sub", "dir:y"),
		".hidden:z":  ".hidden:z",
		"plain-name": "plain-name",
	} {
		st := open(t, spec)
		if _, ok := st.(*dirstore.Store); !ok {
			t.Errorf("Open(%q) opened %T, want a directory", spec, st)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("Open(%q) did not make the directory %q: %v", spec, dir, err)
		}
	}
	if _, ok := open(t, "MEM:").(*memstore.Store); !ok {
		t.Error("MEM: did not open a memstore")
	}
	if _, err := storeurl.Open(storetest.Ctx(t), "mem:sessions"); !errors.Is(err, storeurl.ErrBadSpec) || !strings.Contains(err.Error(), "HOT,COLD") {
		t.Errorf("Open(mem:sessions) = %v; want ErrBadSpec listing the forms", err)
	}
}
