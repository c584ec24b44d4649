package servetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counterCode increments the session's counter n and returns it.
const counterCode = "try:\n    n += 1\nexcept NameError:\n    n = 1\nn"

// redisSpec is the shared test Redis with a prefix of this test's own.
func redisSpec(t *testing.T) string {
	t.Helper()
	u := os.Getenv("MONTY_TEST_REDIS_URL")
	if u == "" {
		if testing.Short() {
			t.Skip("needs Redis: -short (make test-quick) leaves it out; the full test command runs it")
		}
		t.Fatal("MONTY_TEST_REDIS_URL is not set: run `scripts/services.sh start && eval \"$(scripts/services.sh env)\"` (scripts/test.sh does this)")
	}
	return u + "?prefix=" + url.QueryEscape(fmt.Sprintf("servetest/%s/%d/", t.Name(), time.Now().UnixNano()))
}

// TestLoad runs many sessions in parallel against two monty serve
// processes sharing one Redis store, alternating instances on every
// request. Each execution increments its session's counter; every answer
// must be exactly the number of requests so far (no lost or doubled
// state), and the only errors allowed are 429s from the deliberately small
// concurrency, which the client retries.
func TestLoad(t *testing.T) {
	const (
		sessions = 40
		requests = 10
	)
	store := redisSpec(t)
	key := "load-test-api-key"
	a := serve(t, "--store", store, "--api-key", key, "--concurrency", "2")
	b := serve(t, "--store", store, "--api-key", key, "--concurrency", "2")
	instances := []*instance{a, b}

	var rejected, ok atomic.Int64
	deadline := time.Now().Add(3 * time.Minute)
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("load-%d", s)
			for i := 1; i <= requests; i++ {
				in := instances[(s+i)%2]
				for {
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("session %s: out of time at request %d", id, i)
						return
					}
					status, hdr, data, err := in.do("POST", "/exec", mustJSON(map[string]any{"session_id": id, "code": counterCode}), "x-api-key", key)
					if err != nil {
						errs <- fmt.Errorf("session %s request %d: %v", id, i, err)
						return
					}
					if status == 429 {
						if hdr.Get("Retry-After") == "" {
							errs <- fmt.Errorf("429 without Retry-After")
							return
						}
						rejected.Add(1)
						time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
						continue
					}
					var r execResult
					if status != 200 || json.Unmarshal(data, &r) != nil || r.Error != nil {
						errs <- fmt.Errorf("session %s request %d: %d %s", id, i, status, data)
						return
					}
					if got := string(r.Result); got != strconv.Itoa(i) {
						errs <- fmt.Errorf("session %s request %d: counter %s, want %d (lost or doubled state)", id, i, got, i)
						return
					}
					ok.Add(1)
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ok.Load() != sessions*requests {
		t.Fatalf("%d successful executions, want %d", ok.Load(), sessions*requests)
	}
	if rejected.Load() == 0 {
		t.Error("no request was refused with 429: the concurrency bound was never reached")
	}
	// Each session's stored state ends at its number of requests, seen
	// from either instance.
	for s := range sessions {
		status, _, data, err := instances[s%2].do("POST", "/exec", mustJSON(map[string]any{"session_id": fmt.Sprintf("load-%d", s), "code": "n"}), "x-api-key", key)
		var r execResult
		if err != nil || status != 200 || json.Unmarshal(data, &r) != nil || string(r.Result) != strconv.Itoa(requests) {
			t.Errorf("session load-%d final counter: %d %s %v", s, status, data, err)
		}
	}
	t.Logf("%d executions, %d refused with 429 and retried", ok.Load(), rejected.Load())
}
