package dirstore_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/dirstore"
	"github.com/monty-go/monty/session/store/storetest"
)

// The kill and race tests re-execute this test binary as child processes;
// childEnv selects what a child does.
const childEnv = "DIRSTORE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "writer":
		writerChild()
	case "racer":
		racerChild()
	default:
		fmt.Fprintln(os.Stderr, "unknown child", os.Getenv(childEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

func open(t testing.TB, dir string, opts dirstore.Options) *dirstore.Store {
	t.Helper()
	s, err := dirstore.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, t.TempDir(), dirstore.Options{})
	})
	storetest.RunTTL(t, func(t *testing.T, ttl time.Duration) store.Store {
		return open(t, t.TempDir(), dirstore.Options{TTL: ttl})
	}, 300*time.Millisecond)
}

func TestLayout(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{})
	for _, id := range storetest.ValidIDs {
		if _, err := s.Put(ctx, id, []byte(id), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	// Every file is directly in dir, named by a hash: no id escapes it.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	sessions := 0
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("unexpected subdirectory %s", e.Name())
		}
		if strings.HasSuffix(e.Name(), ".session") {
			sessions++
			if len(e.Name()) != 64+len(".session") {
				t.Errorf("odd file name %s", e.Name())
			}
		}
	}
	if sessions != len(storetest.ValidIDs) {
		t.Errorf("%d session files, want %d", sessions, len(storetest.ValidIDs))
	}
	if info, err := s.Stat(ctx, "a"); err != nil || info.Source != "dir" {
		t.Errorf("Stat = %+v, %v; want Source dir", info, err)
	}
	// Delete removes the lock file too.
	for _, id := range storetest.ValidIDs {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left after deleting everything: %v", entries)
	}
}

func TestSurvivesReopen(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{TTL: time.Hour})
	put, err := s.Put(ctx, "persist/me", []byte("state"), store.Cond{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if _, err := s.Get(ctx, "persist/me"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get after Close: %v", err)
	}
	s2 := open(t, dir, dirstore.Options{}) // metadata, expiry included, comes from the file
	got, err := s2.Get(ctx, "persist/me")
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameInfo(t, "after reopen", got.Info, put)
	if got.Info.Expires.IsZero() {
		t.Error("expiry lost across reopen")
	}
	if _, err := s2.Put(ctx, "persist/me", []byte("x"), store.Cond{IfVersion: put.Version}); err != nil {
		t.Errorf("CAS with version from before reopen: %v", err)
	}
}

func TestCorruptionDetected(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{})
	if _, err := s.Put(ctx, "c", []byte("0123456789"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.session"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	raw, _ := os.ReadFile(files[0])
	raw[len(raw)-1] ^= 1 // flip a data bit
	if err := os.WriteFile(files[0], raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "c"); !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("Get of corrupted file: %v", err)
	}
	if err := os.WriteFile(files[0], raw[:len(raw)-3], 0o600); err != nil { // truncate
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "c"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Stat of truncated file: %v", err)
	}
	// An unconditional Put repairs it; a conditional one refuses to guess.
	if _, err := s.Put(ctx, "c", []byte("x"), store.Cond{IfAbsent: true}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("IfAbsent Put over corrupt file: %v", err)
	}
	if _, err := s.Put(ctx, "c", []byte("fixed"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	if obj, err := s.Get(ctx, "c"); err != nil || string(obj.Data) != "fixed" {
		t.Errorf("after repair: %q, %v", obj.Data, err)
	}
}

func TestStaleTempFilesRemovedOnOpen(t *testing.T) {
	dir := t.TempDir()
	open(t, dir, dirstore.Options{})
	fresh := filepath.Join(dir, ".tmp-fresh")
	stale := filepath.Join(dir, ".tmp-stale")
	for _, p := range []string{fresh, stale} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	s := open(t, dir, dirstore.Options{})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temp file (maybe a live writer's) removed: %v", err)
	}
	if list, err := s.List(storetest.Ctx(t)); err != nil || len(list) != 0 {
		t.Errorf("List = %v, %v", list, err)
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := open(t, t.TempDir(), dirstore.Options{})
	if _, err := s.Put(ctx, "x", []byte("x"), store.Cond{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with canceled context: %v", err)
	}
}

// --- kill test ---------------------------------------------------------

// killIDs are the ids the writer child rewrites in a loop.
var killIDs = []string{"kill/a", "kill/b", "kill/c"}

// blob builds the self-describing content written for (id, seq): an 8-byte
// sequence number, then pseudo-random bytes determined by id and seq, of a
// length between 256 KB and 4 MB, also determined by them.
func blob(id string, seq uint64) []byte {
	seed := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", id, seq)))
	r := rand.NewChaCha8(seed)
	n := 256<<10 + int(binary.BigEndian.Uint32(seed[:])%(4<<20-256<<10))
	b := make([]byte, 8+n)
	binary.BigEndian.PutUint64(b, seq)
	_, _ = r.Read(b[8:])
	return b
}

// writerChild rewrites killIDs with increasing sequence numbers until it is
// killed, printing "ok ID SEQ" after each Put returns.
func writerChild() {
	s, err := dirstore.Open(os.Getenv("DIRSTORE_DIR"), dirstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	seq, _ := strconv.ParseUint(os.Getenv("DIRSTORE_SEQ"), 10, 64)
	out := bufio.NewWriter(os.Stdout)
	for ; ; seq++ {
		for _, id := range killIDs {
			if _, err := s.Put(context.Background(), id, blob(id, seq), store.Cond{}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Fprintf(out, "ok %s %d\n", id, seq)
			out.Flush()
		}
	}
}

func child(t *testing.T, kind string, env ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + kind}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestKillMidWrite(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 10
	}
	dir := t.TempDir()
	confirmed := map[string]uint64{} // last seq whose Put returned, per id
	tempsSeen, writes := map[string]bool{}, 0
	for round := 0; round < rounds; round++ {
		start := uint64(round+1) * 1_000_000
		cmd := child(t, "writer", "DIRSTORE_DIR="+dir, "DIRSTORE_SEQ="+strconv.FormatUint(start, 10))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		lines := 0
		done := make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 3 || f[0] != "ok" {
					continue
				}
				seq, _ := strconv.ParseUint(f[2], 10, 64)
				mu.Lock()
				confirmed[f[1]] = seq
				lines++
				mu.Unlock()
			}
		}()
		// Let it write a few blobs, then kill it at a random moment.
		time.Sleep(time.Duration(200+rand.IntN(700)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-done
		_ = cmd.Wait()
		if cmd.ProcessState.Success() {
			t.Fatalf("round %d: writer exited on its own", round)
		}

		temps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
		for _, tmp := range temps {
			tempsSeen[tmp] = true
		}
		writes += lines
		// A restarted process sees only complete blobs, old or new.
		s := open(t, dir, dirstore.Options{})
		ctx := storetest.Ctx(t)
		list, err := s.List(ctx)
		if err != nil {
			t.Fatalf("round %d: List: %v", round, err)
		}
		var ids []string
		for _, info := range list {
			ids = append(ids, info.ID)
		}
		mu.Lock()
		for _, id := range killIDs {
			last, ok := confirmed[id]
			obj, err := s.Get(ctx, id)
			if !ok {
				if err == nil { // written but not yet confirmed: must be the first blob
					checkBlob(t, round, id, obj.Data, start, start)
				} else if !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("round %d: Get(%s): %v", round, id, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d: Get(%s) after kill: %v", round, id, err)
			}
			// Either the last confirmed blob or the one being written when
			// the child died (which may start a new round's numbering).
			next := last + 1
			if last < start {
				next = start
			}
			checkBlob(t, round, id, obj.Data, last, next)
		}
		mu.Unlock()
		for _, id := range ids {
			if !slices.Contains(killIDs, id) {
				t.Fatalf("round %d: List shows unexpected id %q (temp files: %v)", round, id, temps)
			}
		}
		_ = s.Close()
	}
	t.Logf("%d kills, %d completed writes; %d kills left a temporary file (write interrupted mid-way), never read as a session",
		rounds, writes, len(tempsSeen))
	if len(tempsSeen) == 0 {
		t.Errorf("no kill interrupted a write: the test proved nothing; make blobs bigger")
	}
}

func checkBlob(t *testing.T, round int, id string, data []byte, seqs ...uint64) {
	t.Helper()
	if len(data) < 8 {
		t.Fatalf("round %d: %s: torn blob of %d bytes", round, id, len(data))
	}
	seq := binary.BigEndian.Uint64(data)
	if !slices.Contains(seqs, seq) {
		t.Fatalf("round %d: %s holds seq %d, want one of %v (old or new blob)", round, id, seq, seqs)
	}
	if !bytes.Equal(data, blob(id, seq)) {
		t.Fatalf("round %d: %s seq %d: content is torn or mixed", round, id, seq)
	}
}

// --- two-process race -------------------------------------------------------

type raceResult struct {
	Values    []int `json:"values"`
	Conflicts int   `json:"conflicts"`
}

// racerChild increments the counter under "race" N times with
// read-modify-write and IfVersion, retrying on conflict, and prints the
// values it wrote and the conflicts it saw as JSON.
func racerChild() {
	s, err := dirstore.Open(os.Getenv("DIRSTORE_DIR"), dirstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, _ := strconv.Atoi(os.Getenv("DIRSTORE_N"))
	startAt, _ := strconv.ParseInt(os.Getenv("DIRSTORE_START"), 10, 64)
	time.Sleep(time.Until(time.Unix(0, startAt))) // start together
	var res raceResult
	for i := 0; i < n; i++ {
		v, c, err := storetest.Counter(context.Background(), s, "race")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		res.Values = append(res.Values, v)
		res.Conflicts += c
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func TestTwoProcessRace(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	startAt := time.Now().Add(500 * time.Millisecond).UnixNano()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 2; i++ {
		cmd := child(t, "racer", "DIRSTORE_DIR="+dir, "DIRSTORE_N="+strconv.Itoa(n),
			"DIRSTORE_START="+strconv.FormatInt(startAt, 10))
		out := new(bytes.Buffer)
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, out)
	}
	written := map[int]int{}
	conflicts := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("racer %d: %v", i, err)
		}
		var res raceResult
		if err := json.NewDecoder(io.Reader(outs[i])).Decode(&res); err != nil {
			t.Fatalf("racer %d output %q: %v", i, outs[i], err)
		}
		t.Logf("racer %d: %d successful writes, %d conflicts (ErrConflict, retried)", i, len(res.Values), res.Conflicts)
		conflicts += res.Conflicts
		for _, v := range res.Values {
			if prev, dup := written[v]; dup {
				t.Errorf("value %d written by racer %d and racer %d: lost update", v, prev, i)
			}
			written[v] = i
		}
	}
	s := open(t, dir, dirstore.Options{})
	obj, err := s.Get(storetest.Ctx(t), "race")
	if err != nil {
		t.Fatal(err)
	}
	final, _ := strconv.Atoi(string(obj.Data))
	if final != 2*n || len(written) != 2*n {
		t.Errorf("final counter %d, %d distinct successful writes; want %d and %d", final, len(written), 2*n, 2*n)
	}
	if conflicts == 0 {
		t.Errorf("no conflicts: the two processes never raced, so the test proved nothing")
	}
}

func BenchmarkSaveLoad(b *testing.B) {
	s, err := dirstore.Open(b.TempDir(), dirstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.Bench(b, s)
}

// fileOf is the path of the .session file of id in dir.
func fileOf(dir, id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(dir, fmt.Sprintf("%x.session", sum))
}

// dirDamages are the damaged entries a directory store can hold.
func dirDamages() []storetest.Damage {
	dirOf := func(s store.Store) string { return s.(*dirstore.Store).Dir() }
	put := func(t *testing.T, s store.Store, id string, n int) string {
		t.Helper()
		if _, err := s.Put(storetest.Ctx(t), id, bytes.Repeat([]byte{'x'}, n), store.Cond{}); err != nil {
			t.Fatal(err)
		}
		return fileOf(dirOf(s), id)
	}
	truncate := func(t *testing.T, path string, size int64) {
		t.Helper()
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
	return []storetest.Damage{
		{Name: "Garbage", Plant: func(t *testing.T, s store.Store) string {
			if err := os.WriteFile(fileOf(dirOf(s), "junk"), []byte("not a session file\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return "" // the id is in the header, which is garbage
		}},
		{Name: "Empty", Plant: func(t *testing.T, s store.Store) string {
			truncate(t, put(t, s, "empty", 10), 0)
			return ""
		}},
		{Name: "TruncatedHeader", Plant: func(t *testing.T, s store.Store) string {
			truncate(t, put(t, s, "cut/header", 10), int64(len("monty-session-v1\n{\"id\":")))
			return ""
		}},
		{Name: "TruncatedData", Plant: func(t *testing.T, s store.Store) string {
			path := put(t, s, "cut/data", 1000)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			truncate(t, path, fi.Size()-10)
			return "cut/data" // the header survived: it names the id
		}},
		{Name: "GarbledHeader", Plant: func(t *testing.T, s store.Store) string {
			path := put(t, s, "garbled", 10)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			raw = bytes.Replace(raw, []byte(`"size":10`), []byte(`"size":"ten"`), 1)
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{Name: "Misplaced", Plant: func(t *testing.T, s store.Store) string {
			// A file holding another id than the one its name is the hash of.
			if err := os.Rename(put(t, s, "elsewhere", 10), fileOf(dirOf(s), "here")); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{Name: "NoPermission", Plant: func(t *testing.T, s store.Store) string {
			if os.Geteuid() == 0 {
				t.Skip("root reads files whatever their permissions")
			}
			if err := os.Chmod(put(t, s, "locked", 10), 0); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{Name: "NotAFile", Plant: func(t *testing.T, s store.Store) string {
			if err := os.Mkdir(fileOf(dirOf(s), "dir"), 0o700); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
	}
}

// TestUnreadable: one damaged file does not make List fail; it is skipped
// and reported, and the others are listed.
func TestUnreadable(t *testing.T) {
	storetest.RunUnreadable(t, func(t *testing.T) store.Store {
		return open(t, t.TempDir(), dirstore.Options{})
	}, dirDamages())
}

// TestUnreadableNoPermission: a file the process may not read is skipped
// by List and refused by Get and Stat as unreadable (not as an outage of
// the whole store). Root reads every file, so it runs only as another user.
func TestUnreadableNoPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their permissions")
	}
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{})
	for _, id := range []string{"ok", "locked"} {
		if _, err := s.Put(ctx, id, []byte(id), store.Cond{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(fileOf(dir, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	skipped, fatal := store.SplitListError(err)
	if fatal != nil || len(list) != 1 || list[0].ID != "ok" || len(skipped) != 1 || skipped[0].Key != fileOf(dir, "locked") {
		t.Fatalf("List = %v, %v", list, err)
	}
	for what, err := range map[string]error{
		"Get":  func() error { _, err := s.Get(ctx, "locked"); return err }(),
		"Stat": func() error { _, err := s.Stat(ctx, "locked"); return err }(),
	} {
		if !errors.Is(err, store.ErrUnreadable) || !strings.Contains(err.Error(), "permission") {
			t.Errorf("%s of an unreadable file: %v", what, err)
		}
	}
	if err := s.Delete(ctx, "locked"); err != nil {
		t.Errorf("Delete of an unreadable file: %v", err)
	}
}

// TestListIgnoresStrayFiles: files whose names the store never gives a
// blob are not entries: List neither lists nor reports them.
func TestListIgnoresStrayFiles(t *testing.T) {
	ctx := storetest.Ctx(t)
	dir := t.TempDir()
	s := open(t, dir, dirstore.Options{})
	if _, err := s.Put(ctx, "kept", []byte("x"), store.Cond{}); err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(filepath.Base(fileOf(dir, "gone")), ".session")
	for _, name := range []string{
		".tmp-" + base + "-12345", // a Put in progress, or one that died
		base + ".lock",            // a lock file without its blob
		"notes.session",           // not a hash
		strings.ToUpper(base) + ".session",
		"README",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "kept" {
		t.Errorf("List = %v, %v; want just kept, no error", list, err)
	}
}

// TestListFailsWithoutDirectory: a directory that cannot be read is an
// outage of the whole store, not a skipped entry.
func TestListFailsWithoutDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s := open(t, dir, dirstore.Options{})
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(storetest.Ctx(t))
	if _, fatal := store.SplitListError(err); fatal == nil || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrUnreadable) || list != nil {
		t.Errorf("List of a missing directory = %v, %v; want ErrUnavailable and no list", list, err)
	}
}
