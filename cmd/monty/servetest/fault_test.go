package servetest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// redisServer is a redis-server process of this test's own.
type redisServer struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on port with an append-only file in dir
// synced on every write, so a restart keeps every acknowledged write.
func startRedis(t *testing.T, port int, dir string) *redisServer {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil && testing.Short() {
		t.Skip("needs redis-server: -short (make test-quick) leaves it out; the full test command runs it")
	}
	if err != nil {
		t.Fatal("redis-server is not installed; scripts/services.sh start installs it (apt-get install redis-server)")
	}
	r := &redisServer{t: t, port: port, dir: dir}
	r.cmd = exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--protected-mode", "yes")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kill)
	for range 100 {
		if r.ping() {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("redis-server on port %d did not answer PING within 5s", port)
	return nil
}

func (r *redisServer) ping() bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "+PONG\r\n"
}

// kill stops the server abruptly (SIGKILL), as a crash would.
func (r *redisServer) kill() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// outcome of one request in the fault test.
type outcome struct {
	index  int
	ok     bool
	status int
	code   string
}

// TestRedisRestart kills the Redis behind monty serve in the middle of a
// load and starts it again. While it is down requests fail at once with
// 503 store_unavailable and /healthz says so; afterwards they succeed
// again. Each request appends its index to a list in its session: at the
// end every session's list must be intact, in order, and hold every index
// that was acknowledged (plus possibly indexes whose answer was lost with
// the connection, never anything else).
func TestRedisRestart(t *testing.T) {
	port := freePort(t)
	dir := t.TempDir()
	redis := startRedis(t, port, dir)
	srv := serve(t, "--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port), "--concurrency", "8")

	const sessions = 6
	var (
		mu       sync.Mutex
		results  = map[int][]outcome{}
		stopLoad atomic.Bool
		wg       sync.WaitGroup
	)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("fault-%d", s)
			for i := 1; !stopLoad.Load(); i++ {
				code := "try:\n    seen.append(i)\nexcept NameError:\n    seen = [i]\nlen(seen)"
				status, _, data, err := srv.do("POST", "/exec", mustJSON(map[string]any{"session_id": id, "code": code, "inputs": map[string]int{"i": i}}))
				o := outcome{index: i, status: status}
				switch {
				case err != nil:
					o.code = err.Error()
				case status == 200:
					var r execResult
					o.ok = json.Unmarshal(data, &r) == nil && r.Error == nil
					if !o.ok {
						o.code = string(data)
					}
				default:
					var e errorBody
					_ = json.Unmarshal(data, &e)
					o.code = e.Error
				}
				mu.Lock()
				results[s] = append(results[s], o)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	count := func(ok bool) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, rs := range results {
			for _, o := range rs {
				if o.ok == ok {
					n++
				}
			}
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				stopLoad.Store(true)
				wg.Wait()
				t.Fatalf("timed out waiting for %s\n%s", what, srv.log())
			}
		}
	}
	waitFor("successes before the outage", func() bool { return count(true) >= 30 })

	redis.kill()
	okBefore, failBefore := count(true), count(false)
	waitFor("failures during the outage", func() bool { return count(false) >= failBefore+6 })
	status, _, data, err := srv.do("GET", "/healthz", nil)
	if err != nil || status != 503 {
		t.Errorf("healthz while Redis is down: %d %s %v", status, data, err)
	}
	time.Sleep(300 * time.Millisecond)

	redis = startRedis(t, port, dir)
	okDuring := count(true) - okBefore
	failMark := count(false)
	waitFor("successes after the restart", func() bool { return count(true) >= okBefore+okDuring+30 })
	stopLoad.Store(true)
	wg.Wait()
	if status, _, data, err := srv.do("GET", "/healthz", nil); err != nil || status != 200 {
		t.Errorf("healthz after the restart: %d %s %v", status, data, err)
	}

	for s := range sessions {
		rs := results[s]
		acked, failed := map[int]bool{}, map[int]bool{}
		for _, o := range rs {
			if o.ok {
				acked[o.index] = true
				continue
			}
			failed[o.index] = true
			// A failure must be a clear, retryable answer.
			if o.status != 503 || o.code != "store_unavailable" {
				t.Errorf("session %d request %d failed unclearly: status %d %q", s, o.index, o.status, o.code)
			}
		}
		status, _, data, err := srv.do("POST", "/exec", mustJSON(map[string]any{"session_id": fmt.Sprintf("fault-%d", s), "code": "seen"}))
		var r execResult
		if err != nil || status != 200 || json.Unmarshal(data, &r) != nil || r.Error != nil {
			t.Fatalf("session %d is not usable after the restart: %d %s %v", s, status, data, err)
		}
		var seen []int
		if err := json.Unmarshal(r.Result, &seen); err != nil {
			t.Fatalf("session %d: seen = %s", s, r.Result)
		}
		if !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != len(seen) {
			t.Errorf("session %d: list out of order or repeated: %v", s, seen)
		}
		in := map[int]bool{}
		for _, i := range seen {
			in[i] = true
			if !acked[i] && !failed[i] {
				t.Errorf("session %d: list holds %d, which was never sent", s, i)
			}
		}
		for i := range acked {
			if !in[i] {
				t.Errorf("session %d: acknowledged request %d is missing from %v", s, i, seen)
			}
		}
	}
	t.Logf("ok before the outage %d, during %d, failed %d, ok in all %d", okBefore, okDuring, failMark-failBefore, count(true))
	if okDuring > sessions {
		t.Errorf("%d requests succeeded while Redis was down", okDuring)
	}
}

// command sends one inline command and returns the first line of its
// reply.
func (r *redisServer) command(cmd string) string {
	r.t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
	if err != nil {
		r.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		r.t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		r.t.Fatal(err)
	}
	return line
}

// TestReadOnlyExecWhileRedisRefusesWrites: while the Redis behind monty
// serve refuses writes (min-replicas-to-write with no replica), a /exec
// that changes nothing answers 200 with the stored state (with or without
// an Idempotency-Key), one that changes something 503, and the refused
// change is not in the session once Redis takes writes again.
func TestReadOnlyExecWhileRedisRefusesWrites(t *testing.T) {
	port := freePort(t)
	redis := startRedis(t, port, t.TempDir())
	srv := serve(t, "--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	exec := func(code string, header ...string) (int, execResult, errorBody, http.Header) {
		t.Helper()
		status, h, data, err := srv.do("POST", "/exec", mustJSON(map[string]any{"session_id": "ro", "code": code}), header...)
		if err != nil {
			t.Fatal(err)
		}
		var r execResult
		var e errorBody
		if status == 200 {
			err = json.Unmarshal(data, &r)
		} else {
			err = json.Unmarshal(data, &e)
		}
		if err != nil {
			t.Fatalf("%d %s: %v", status, data, err)
		}
		return status, r, e, h
	}
	if status, _, e, _ := exec("log = [1, 2]"); status != 200 {
		t.Fatalf("first /exec: %d %+v", status, e)
	}
	if line := redis.command("CONFIG SET min-replicas-to-write 1"); line != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", line)
	}
	if status, _, e, _ := exec("log.append(3)"); status != 503 || e.Error != "store_unavailable" {
		t.Fatalf("a change while Redis refuses writes: %d %+v, want 503 store_unavailable", status, e)
	}
	for _, hdr := range [][]string{nil, {"Idempotency-Key", "read-while-refused"}} {
		status, r, e, _ := exec("log", hdr...)
		if status != 200 || string(r.Result) != "[1,2]" {
			t.Fatalf("a read (headers %v) while Redis refuses writes: %d %+v %+v", hdr, status, r, e)
		}
	}
	if line := redis.command("CONFIG SET min-replicas-to-write 0"); line != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", line)
	}
	if status, r, e, _ := exec("log.append(3)\nlog"); status != 200 || string(r.Result) != "[1,2,3]" {
		t.Fatalf("after the outage: %d %+v %+v (the refused change must not be in the session)", status, r, e)
	}
}
