package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// client sends logical requests to the monty instances, retrying each on
// errors and time-outs with the same Idempotency-Key, on the other
// instance each time.
type client struct {
	http      *http.Client
	urls      []string // the instances' base URLs
	apiKey    string
	limitMS   int           // limits.duration_ms of every request
	opTimeout time.Duration // how long a logical request is retried
	noKey     bool          // send no Idempotency-Key (a self-test of the checker)
}

// newClient makes a client whose HTTP requests give up after the request's
// time limit plus slack: an answer later than that is a hang.
func newClient(urls []string, apiKey string, limitMS int, slack, opTimeout time.Duration) *client {
	return &client{
		http: &http.Client{
			Timeout:   time.Duration(limitMS)*time.Millisecond + slack,
			Transport: &http.Transport{MaxIdleConnsPerHost: 32, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext},
		},
		urls: urls, apiKey: apiKey, limitMS: limitMS, opTimeout: opTimeout,
	}
}

// appendCode appends v to the session's list and returns the list; create
// makes the list when the session has none (the session's first request).
func appendCode(v string, create bool) string {
	if create {
		return fmt.Sprintf("try:\n    log\nexcept NameError:\n    log = []\nlog.append(%q)\nlog", v)
	}
	return fmt.Sprintf("log.append(%q)\nlog", v)
}

// answer is what one attempt got back.
type answer struct {
	status     int
	class      string
	list       []string
	pyError    string
	warning    string
	replayed   bool
	retryAfter bool
	detail     string
	retriable  bool
}

// run performs one logical request: the first attempt on instance first,
// retries alternating instances until an answer that is final or until
// opTimeout.
func (c *client) run(ctx context.Context, op *Op, code string, first int) {
	op.Call = time.Now()
	deadline := op.Call.Add(c.opTimeout)
	for n := 0; ; n++ {
		inst := (first + n) % len(c.urls)
		a := Attempt{Instance: inst, Start: time.Now()}
		ans := c.attempt(ctx, inst, op, code)
		a.End = time.Now()
		a.Class, a.Replayed, a.RetryAfter, a.Detail = ans.class, ans.replayed, ans.retryAfter, ans.detail
		op.Attempts = append(op.Attempts, a)
		if !ans.retriable {
			op.Return = a.End
			op.Warning = ans.warning
			op.PyError = ans.pyError
			if ans.status == 200 && ans.pyError == "" {
				op.Outcome, op.List = Acked, ans.list
			} else {
				op.Outcome = Refused
			}
			return
		}
		wait := min(50*time.Millisecond<<min(n, 4), 500*time.Millisecond)
		if ans.retryAfter {
			wait = 250 * time.Millisecond
		}
		if time.Now().Add(wait).After(deadline) {
			op.Return, op.Outcome = time.Now(), Unknown
			return
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			op.Return, op.Outcome = time.Now(), Unknown
			return
		}
	}
}

// attempt sends one POST /exec.
func (c *client) attempt(ctx context.Context, inst int, op *Op, code string) answer {
	body, _ := json.Marshal(map[string]any{
		"code": code, "session_id": op.Session,
		"limits": map[string]int{"duration_ms": c.limitMS},
	})
	req, err := http.NewRequestWithContext(ctx, "POST", c.urls[inst]+"/exec", bytes.NewReader(body))
	if err != nil {
		return answer{class: "request", detail: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("x-api-key", c.apiKey)
	}
	if op.Key != "" && !c.noKey {
		req.Header.Set("Idempotency-Key", op.Key)
	}
	if op.ExpectState {
		req.Header.Set("If-Match", "*")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{class: transportClass(err), detail: err.Error(), retriable: true}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{class: transportClass(err), detail: err.Error(), retriable: true}
	}
	a := answer{
		status:     resp.StatusCode,
		replayed:   resp.Header.Get("Idempotent-Replayed") == "true",
		retryAfter: resp.Header.Get("Retry-After") != "",
	}
	if resp.StatusCode == 200 {
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			StateWarning *struct {
				Code string `json:"code"`
			} `json:"state_warning"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			a.status, a.class, a.detail = -1, "bad_answer unreadable", err.Error()
			return a
		}
		if r.StateWarning != nil {
			a.warning = r.StateWarning.Code
		}
		if r.Error != nil {
			a.pyError = r.Error.Type
			a.class, a.detail = "200 "+r.Error.Type, r.Error.Message
			return a
		}
		if err := json.Unmarshal(r.Result, &a.list); err != nil {
			a.status, a.class, a.detail = -1, "bad_answer unexpected_result", string(r.Result)
			return a
		}
		a.class = "200"
		return a
	}
	code, msg := errorCode(data)
	a.class = strconv.Itoa(resp.StatusCode) + " " + code
	a.detail = msg
	switch resp.StatusCode {
	case 409, 429, 500, 502, 503, 504:
		// 409: busy, conflict or a key in flight; 500 is a violation but
		// its effect is unknown, so it is retried as well.
		a.retriable = code != "run_paused" && code != "idempotency_key_reused"
	}
	return a
}

// errorCode reads the error code and message of an error body, whether
// "error" is the code or an object holding it.
func errorCode(data []byte) (string, string) {
	var flat struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if err := json.Unmarshal(data, &flat); err != nil || len(flat.Error) == 0 {
		return "not_json", strings.TrimSpace(string(data[:min(len(data), 200)]))
	}
	var s string
	if json.Unmarshal(flat.Error, &s) == nil {
		return s, flat.Message
	}
	var obj struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(flat.Error, &obj) == nil && obj.Code != "" {
		return obj.Code, obj.Message
	}
	return "no_code", string(data[:min(len(data), 200)])
}

// transportClass names a network error.
func transportClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection reset"
	}
	return "transport"
}
