package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
)

// TestTransfersTakeSlots: state uploads and downloads take an execution
// slot (they hold a whole blob in memory), so with every slot busy they get
// 429 at once; a download the client already has (If-None-Match), info and
// delete need none.
func TestTransfersTakeSlots(t *testing.T) {
	st := newSignalStore()
	srv := newServer(t, httpapi.Options{Session: session.Options{Store: st}, MaxConcurrent: 1})
	c := srv.client("")
	s := c.run("", "x = 1")
	_, _, blob := c.do("GET", "/state/"+s.SessionID, nil)
	for len(st.gets) > 0 {
		<-st.gets
	}

	// An execution holds the only slot from before it loads the session.
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.exec(map[string]any{"code": "import time\ntime.sleep(2)", "session_id": "busy"})
	}()
	st.waitGet(t)
	status, hdr, body := c.do("POST", "/state/"+s.SessionID, blob)
	wantError(t, "upload while busy", status, body, http.StatusTooManyRequests, "at_capacity")
	if hdr.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	status, _, body = c.do("GET", "/state/"+s.SessionID, nil)
	wantError(t, "download while busy", status, body, http.StatusTooManyRequests, "at_capacity")
	if status, _, _ := c.do("GET", "/state/"+s.SessionID, nil, "If-None-Match", `"`+s.StateHash+`"`); status != http.StatusNotModified {
		t.Fatalf("download the client has, while busy: %d", status)
	}
	if status, _, _ := c.do("GET", "/state/"+s.SessionID+"/info", nil); status != 200 {
		t.Fatalf("info while busy: %d", status)
	}
	<-done

	// Concurrent uploads never hold more than the slots: each is stored or
	// refused with 429, and every 429 is counted.
	srv2 := newServer(t, httpapi.Options{MaxConcurrent: 2})
	c2 := srv2.client("")
	s2 := c2.run("up", "data = 'x' * 100000")
	_, _, blob2 := c2.do("GET", "/state/"+s2.SessionID, nil)
	var wg sync.WaitGroup
	statuses := make(chan int, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, _ := c2.do("POST", "/state/up", blob2)
			statuses <- status
		}()
	}
	wg.Wait()
	close(statuses)
	stored, refused := 0, 0
	for st := range statuses {
		switch st {
		case 201:
			stored++
		case 429:
			refused++
		default:
			t.Fatalf("concurrent upload: %d", st)
		}
	}
	_, _, m := c2.do("GET", "/metrics", nil)
	if stored == 0 || !strings.Contains(string(m), fmt.Sprintf("monty_executions_rejected_total %d\n", refused)) {
		t.Fatalf("%d stored, %d refused; metrics:\n%s", stored, refused, m)
	}
}

// TestClientGoneFreesSlot: a client that disconnects while its code runs
// frees the slot at once, long before the time limit: the run is cancelled
// through the request's context. Checked for a busy loop under a 2 s
// limit, and for a sleep under a 60 s one.
func TestClientGoneFreesSlot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  string
		limit time.Duration
	}{
		{"busy loop", "while True:\n    pass", 2 * time.Second},
		{"sleep", "import time\ntime.sleep(30)", 60 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSignalStore()
			reqs := newRequestLog()
			srv := newServer(t, httpapi.Options{
				Session:       session.Options{Store: st, Limits: leanLimits(tc.limit)},
				MaxConcurrent: 1,
				Logger:        slogFor(reqs),
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.srv.URL+"/exec", strings.NewReader(`{"code": `+quote(tc.code)+`}`))
			gone := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
				}
				gone <- err
			}()
			st.waitGet(t) // the execution has its slot and is loading
			// No signal says the code itself is running; give it a moment
			// so that the cancellation lands in the run, not in the load.
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			cancel()
			if err := <-gone; err == nil {
				t.Fatal("the request finished before the client went away")
			}
			select {
			case rec := <-reqs.done:
				if !strings.HasPrefix(rec, "/exec ") {
					t.Fatalf("unexpected request record %q", rec)
				}
			case <-time.After(time.Second):
				t.Fatalf("the execution still held its slot 1s after the client went away (limit %v)", tc.limit)
			}
			t.Logf("slot freed %v after the client went away", time.Since(start))
			// The slot is free: the next request runs (no 429).
			if got := srv.client("").run("", "1 + 1"); string(got.Result) != "2" {
				t.Fatalf("next request: %+v", got)
			}
		})
	}
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func slogFor(h slog.Handler) *slog.Logger { return slog.New(h) }
