package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServerless runs the example against the Redis and S3 servers of
// scripts/services.sh: a session continues across two requests, and the
// function stops cleanly when its context ends.
func TestServerless(t *testing.T) {
	for _, v := range []string{"MONTY_TEST_REDIS_URL", "MONTY_TEST_S3_ENDPOINT"} {
		if os.Getenv(v) == "" {
			if testing.Short() {
				t.Skip("needs Redis and S3: -short (make test-quick) leaves it out; the full test command runs it")
			}
			t.Fatalf("%s is not set: run `scripts/services.sh start && eval \"$(scripts/services.sh env)\"`", v)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	t.Setenv("PORT", fmt.Sprint(port))
	t.Setenv("REDIS_URL", os.Getenv("MONTY_TEST_REDIS_URL"))
	t.Setenv("S3_ENDPOINT", os.Getenv("MONTY_TEST_S3_ENDPOINT"))
	t.Setenv("S3_BUCKET", os.Getenv("MONTY_TEST_S3_BUCKET"))
	t.Setenv("S3_ACCESS_KEY", os.Getenv("MONTY_TEST_S3_ACCESS_KEY"))
	t.Setenv("S3_SECRET_KEY", os.Getenv("MONTY_TEST_S3_SECRET_KEY"))
	t.Setenv("MONTY_SIGNING_KEY", "serverless-example-test-key")
	t.Setenv("MONTY_API_KEYS", "example-key-1")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	post := func(body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/exec", strings.NewReader(body))
		req.Header.Set("x-api-key", "example-key-1")
		var resp *http.Response
		for end := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if resp, err = http.DefaultClient.Do(req); err == nil || time.Now().After(end) {
				break
			}
			req.Body = io.NopCloser(strings.NewReader(body))
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if resp.StatusCode != 200 || json.NewDecoder(bytes.NewReader(data)).Decode(&out) != nil {
			t.Fatalf("exec: %d %s", resp.StatusCode, data)
		}
		return out
	}
	first := post(`{"code": "greeting = 'hello'"}`)
	second := post(`{"code": "greeting + ' again'", "session_id": "` + first["session_id"].(string) + `"}`)
	if second["result"] != "hello again" {
		t.Fatalf("second call: %v", second)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}
