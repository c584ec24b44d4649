// Command load measures POST /exec of a running `monty serve` on loopback:
// throughput and latency percentiles for a tiny program, without a session
// (every request starts a new one) and continuing a session per client.
// scripts/bench/load.sh builds monty, starts the server and runs this.
//
//	go run ./scripts/bench/load -url http://127.0.0.1:8080 -c 4 -d 10s
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080", "server `URL`")
	key := flag.String("api-key", "", "x-api-key to send")
	conc := flag.Int("c", 4, "concurrent clients")
	dur := flag.Duration("d", 10*time.Second, "duration of each scenario")
	perSession := flag.Int("per-session", 100, "requests per session before a client starts a new one (a session's state grows with every call)")
	flag.Parse()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *conc * 2}}
	fmt.Printf("%-28s %8s %10s %8s %8s %8s %8s %6s\n", "scenario", "requests", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "429s")
	for _, sc := range []struct {
		name    string
		session bool
		code    string
	}{
		{"tiny, new session each", false, "1 + 1"},
		{"tiny, continuing a session", true, "try:\n    n += 1\nexcept NameError:\n    n = 1\nn"},
	} {
		if err := scenario(client, *url, *key, sc.name, sc.code, sc.session, *conc, *perSession, *dur); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
	}
}

// scenario runs conc clients for dur and prints one line of figures.
func scenario(client *http.Client, url, key, name, code string, session bool, conc, perSession int, dur time.Duration) error {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		rejected  int
		firstErr  error
		wg        sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(dur)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body []byte
			for i := 0; time.Now().Before(end); i++ {
				if i%perSession == 0 {
					req := map[string]any{"code": code}
					if session {
						req["session_id"] = fmt.Sprintf("load-%d-%d-%d", start.UnixNano(), w, i)
					}
					body, _ = json.Marshal(req)
				}
				t0 := time.Now()
				status, data, err := post(client, url+"/exec", key, body)
				lat := time.Since(t0)
				mu.Lock()
				switch {
				case err != nil || (status != 200 && status != 429):
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: status %d %s %v", name, status, data, err)
					}
				case status == 429:
					rejected++
				default:
					latencies = append(latencies, lat)
				}
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	elapsed := time.Since(start)
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		i := min(len(latencies)-1, int(p*float64(len(latencies))))
		return float64(latencies[i].Microseconds()) / 1000
	}
	fmt.Printf("%-28s %8d %10.0f %8.2f %8.2f %8.2f %8.2f %6d\n", name, len(latencies), float64(len(latencies))/elapsed.Seconds(), pct(0.5), pct(0.9), pct(0.99), pct(1), rejected)
	return nil
}

func post(client *http.Client, url, key string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
