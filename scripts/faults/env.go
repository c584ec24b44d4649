package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
)

// env is the servers one run of the suite starts: Redis and versitygw
// behind toxiproxy, and the pair of monty instances of the current
// scenario.
type env struct {
	cfg       config
	toxi      *toxiproxy.Client
	toxiProc  *proc
	redis     *proc
	redisPort int
	s3        *proc
	s3Port    int
	s3Secret  string
	// redisProxy and s3Proxy are the toxiproxy links the instances use.
	redisProxy, s3Proxy   *toxiproxy.Proxy
	redisListen, s3Listen string
	// charge is the MCP server of the approvals scenario (started by it).
	charge *chargeServer

	mu    sync.Mutex
	procs []*proc // every process started, for the crash and RSS checks
	// down holds, per instance URL, the times it was not serving (killed
	// and restarting), so that connection errors then are expected.
	down map[string][][2]time.Time
}

func (e *env) track(p *proc) *proc {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = append(e.procs, p)
	return p
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startServices starts toxiproxy, Redis and versitygw, and the two
// toxiproxy links.
func startServices(cfg config) (*env, error) {
	e := &env{cfg: cfg, down: map[string][][2]time.Time{}, s3Secret: randomHex(16)}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	api := "127.0.0.1:" + strconv.Itoa(port)
	e.toxiProc = e.track(&proc{name: "toxiproxy-server", args: []string{cfg.toxiproxy, "-host", "127.0.0.1", "-port", strconv.Itoa(port)}, log: filepath.Join(cfg.work, "toxiproxy.log")})
	if err := startAndWait(e.toxiProc, httpReady("http://"+api+"/version")); err != nil {
		return nil, err
	}
	e.toxi = toxiproxy.NewClient(api)

	if e.redisPort, err = freePort(); err != nil {
		return nil, err
	}
	redisDir := filepath.Join(cfg.work, "redis")
	if err := os.MkdirAll(redisDir, 0o700); err != nil {
		return nil, err
	}
	e.redis = e.track(&proc{name: "redis-server", args: []string{cfg.redisServer, "--bind", "127.0.0.1", "--port", strconv.Itoa(e.redisPort),
		"--save", "", "--appendonly", "no", "--dir", redisDir}, log: filepath.Join(cfg.work, "redis.log")})
	if err := startAndWait(e.redis, tcpReady(fmt.Sprintf("127.0.0.1:%d", e.redisPort))); err != nil {
		return nil, err
	}

	if e.s3Port, err = freePort(); err != nil {
		return nil, err
	}
	s3Root := filepath.Join(cfg.work, "s3root")
	if err := os.MkdirAll(s3Root, 0o700); err != nil {
		return nil, err
	}
	e.s3 = e.track(&proc{name: "versitygw", args: []string{cfg.versitygw, "--port", fmt.Sprintf("127.0.0.1:%d", e.s3Port), "--quiet", "posix", s3Root},
		env: []string{"ROOT_ACCESS_KEY=" + s3AccessKey, "ROOT_SECRET_KEY=" + e.s3Secret}, log: filepath.Join(cfg.work, "versitygw.log")})
	if err := startAndWait(e.s3, tcpReady(fmt.Sprintf("127.0.0.1:%d", e.s3Port))); err != nil {
		return nil, err
	}

	for _, link := range []struct {
		name     string
		upstream int
		proxy    **toxiproxy.Proxy
		listen   *string
	}{{"redis", e.redisPort, &e.redisProxy, &e.redisListen}, {"s3", e.s3Port, &e.s3Proxy, &e.s3Listen}} {
		lp, err := freePort()
		if err != nil {
			return nil, err
		}
		*link.listen = fmt.Sprintf("127.0.0.1:%d", lp)
		if *link.proxy, err = e.toxi.CreateProxy(link.name, *link.listen, fmt.Sprintf("127.0.0.1:%d", link.upstream)); err != nil {
			return nil, fmt.Errorf("toxiproxy link to %s: %w", link.name, err)
		}
	}
	return e, nil
}

const (
	s3AccessKey = "faultstest"
	s3Bucket    = "monty-faults"
	apiKey      = "faults-api-key-0123456789"
)

// redisSpec and s3Spec are the store specs of the links through toxiproxy.
func (e *env) redisSpec(db int) string { return fmt.Sprintf("redis://%s/%d", e.redisListen, db) }
func (e *env) s3Spec() string {
	return fmt.Sprintf("s3://%s:%s@%s/%s", s3AccessKey, e.s3Secret, e.s3Listen, s3Bucket)
}

// instance is one `monty serve` of a scenario.
type instance struct {
	p   *proc
	url string
	// front is the proxy the clients reach the instance through.
	front *front
}

// close stops the instance and its front.
func (inst *instance) close() {
	if inst.p.pid() != 0 {
		inst.p.stop()
	}
	inst.front.close()
}

// startInstances starts two `monty serve` sharing the store spec.
func (e *env) startInstances(scenario, spec string, extra []string) ([]*instance, error) {
	var out []*instance
	for i := range 2 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		args := append([]string{e.cfg.monty, "serve", "--addr", addr, "--store", spec, "--api-key", apiKey, "--log-format", "json"}, extra...)
		p := e.track(&proc{name: fmt.Sprintf("monty %s #%d", scenario, i), args: args,
			env: []string{"MONTY_SIGNING_KEY=faults-signing-key-0123456789abcdef"},
			log: filepath.Join(e.cfg.work, fmt.Sprintf("monty-%s-%d.log", scenario, i))})
		fr, err := newFront(addr)
		if err != nil {
			return nil, err
		}
		inst := &instance{p: p, url: "http://" + addr, front: fr}
		if err := startAndWait(p, httpReady(inst.url+"/health")); err != nil {
			fr.close()
			return nil, err
		}
		out = append(out, inst)
	}
	return out, nil
}

// killInstance SIGKILLs an instance and marks it down from now.
func (e *env) killInstance(inst *instance) {
	e.markDown(inst.front.url(), true)
	inst.p.kill()
}

// restartInstance starts a killed instance again and marks it up once it
// answers /health.
func (e *env) restartInstance(inst *instance) error {
	err := startAndWait(inst.p, httpReady(inst.url+"/health"))
	e.markDown(inst.front.url(), false)
	return err
}

// markDown starts (down) or ends a time in which the instance its
// clients reach at url may fail their connections: it was killed, or its
// answers are being lost.
func (e *env) markDown(url string, down bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if down {
		e.down[url] = append(e.down[url], [2]time.Time{time.Now(), {}})
		return
	}
	d := e.down[url]
	d[len(d)-1][1] = time.Now()
}

// wasDown reports whether the instance at url was down (or losing
// answers) at some time in [from-1s, to+1s].
func (e *env) wasDown(url string, from, to time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, d := range e.down[url] {
		end := d[1]
		if end.IsZero() {
			end = time.Now()
		}
		if !d[0].After(to.Add(time.Second)) && !end.Before(from.Add(-time.Second)) {
			return true
		}
	}
	return false
}

// sampleRSS samples every process's peak RSS every 250 ms until stop closes.
func (e *env) sampleRSS(stop <-chan struct{}) {
	for {
		e.mu.Lock()
		ps := append([]*proc(nil), e.procs...)
		e.mu.Unlock()
		for _, p := range ps {
			p.sampleRSS()
		}
		select {
		case <-stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// close stops every process still running.
func (e *env) close() {
	e.mu.Lock()
	ps := append([]*proc(nil), e.procs...)
	e.mu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].pid() != 0 {
			ps[i].stop()
		}
	}
}

// mountTmpfs mounts a tmpfs of size at dir (root only).
func mountTmpfs(dir, size string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size)
}

// unmount unmounts dir, lazily so that a file still open does not stop it.
func unmount(dir string) {
	_ = syscall.Unmount(dir, syscall.MNT_DETACH)
}

func isENOSPC(err error) bool { return errors.Is(err, syscall.ENOSPC) }
