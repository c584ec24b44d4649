// Command serverless is the Monty HTTP API as a minimal serverless-style
// function (Cloud Run, Lambda behind a web adapter, Fly Machines, …): state
// lives in Redis (hot) with an S3-compatible archive (cold), so any instance
// continues any session and instances can come and go.
//
// Configuration, from the environment:
//
//	PORT                  port to listen on (default 8080)
//	REDIS_URL             redis://[user:pass@]host:port/db
//	S3_ENDPOINT           host:port of the S3-compatible server
//	S3_BUCKET             bucket for archived sessions
//	S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION, S3_SSL=1
//	MONTY_SIGNING_KEY     HMAC key for state blobs, the same on every instance
//	MONTY_API_KEYS        comma-separated API keys (empty: no authentication)
//	MONTY_CACHE_DIR       compilation cache baked into the image with
//	                      `monty precompile --cache-dir …` (see docs/http.md);
//	                      without one the first requests run on wazero's
//	                      interpreter engine while the module compiles
//
// See docs/http.md for the API and the notes on cold starts.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/monty-go/monty/runtime"
	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/redisstore"
	"github.com/monty-go/monty/session/store/s3store"
	"github.com/monty-go/monty/session/store/tiered"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("exiting", "error", err)
		stop()
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, log *slog.Logger) error {
	// Load the machine code from MONTY_CACHE_DIR before taking traffic or,
	// with nothing cached, start on wazero's interpreter engine (about a
	// second) and switch to machine code compiled in the background.
	engine, err := runtime.NewEngine(ctx, runtime.WithFastStart(), runtime.WithLogger(log))
	if err != nil {
		return err
	}
	defer engine.Close(context.Background())
	info := engine.CompileInfo()
	log.Info("interpreter ready", "took", info.Ready, "cached", info.Cached, "fast_start", info.FastStart)

	hot, err := redisstore.New(ctx, redisstore.Options{URL: os.Getenv("REDIS_URL"), TTL: 2 * time.Hour})
	if err != nil {
		return err
	}
	cold, err := s3store.New(ctx, s3store.Options{
		Endpoint:  os.Getenv("S3_ENDPOINT"),
		Bucket:    os.Getenv("S3_BUCKET"),
		AccessKey: os.Getenv("S3_ACCESS_KEY"),
		SecretKey: os.Getenv("S3_SECRET_KEY"),
		Region:    os.Getenv("S3_REGION"),
		UseSSL:    os.Getenv("S3_SSL") == "1",
		TTL:       7 * 24 * time.Hour,
	})
	if err != nil {
		hot.Close()
		return err
	}
	st, err := tiered.New(tiered.Options{Hot: hot, Cold: cold, ArchiveAfter: time.Hour})
	if err != nil {
		hot.Close()
		cold.Close()
		return err
	}
	defer st.Close()
	// Copy idle sessions to the archive in the background. Where instances
	// are frozen between requests (Lambda), call st.ArchiveOnce from a
	// scheduled job instead.
	st.Start()

	var keys []string
	for _, k := range strings.Split(os.Getenv("MONTY_API_KEYS"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	// The process's keeper of live sessions: a session continued request
	// after request stays open here, and it is claimed in the store so
	// that one instance at a time runs it.
	keeper := session.NewManager(session.Options{Store: st, Engine: engine}, session.ManagerOptions{})
	defer keeper.Close()
	h, err := httpapi.New(httpapi.Options{
		Keeper: keeper,
		Session: session.Options{
			Store:      st,
			Engine:     engine,
			SigningKey: []byte(os.Getenv("MONTY_SIGNING_KEY")),
			Limits:     runtime.Limits{MaxDuration: 30 * time.Second, MaxMemory: 256 << 20, MaxOutput: 1 << 20},
		},
		APIKeys: keys,
		Logger:  log,
	})
	if err != nil {
		return err
	}

	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	srv := &http.Server{Addr: ":" + port, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Info("listening", "port", port)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// The platform sends SIGTERM and waits a few seconds: finish running
	// executions (their state is stored when they end), then exit.
	sctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- h.Shutdown(sctx) }()
	err = srv.Shutdown(sctx)
	return errors.Join(<-drained, err)
}
