package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a server process this driver started: it can be killed and
// started again with the same command line, and it dies with the driver
// (Pdeathsig). An exit the driver did not cause is a crash.
type proc struct {
	name string
	args []string
	env  []string
	log  string // file that gets stdout and stderr, appended across restarts

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	stopping bool // the driver is stopping or killing it
	crashes  []string
	peakRSS  int64 // largest VmHWM seen, in KiB, over every run
}

// command is the command line args with env added, its stderr appended
// to the file log (returned, to close once it exits), dying with the
// driver (Pdeathsig).
func command(args, env []string, log string) (*exec.Cmd, *os.File, error) {
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, f, nil
}

// start runs the process (again).
func (p *proc) start() error {
	cmd, f, err := command(p.args, p.env, p.log)
	if err != nil {
		return err
	}
	cmd.Stdout = f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.stopping = cmd, done, false
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		if !p.stopping {
			p.crashes = append(p.crashes, fmt.Sprintf("%s (pid %d) exited by itself at %s: %v (log: %s)", p.name, cmd.Process.Pid, time.Now().Format("15:04:05.000"), err, p.log))
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// pid is the running process's id (0 when none runs).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	select {
	case <-p.done:
		return 0
	default:
	}
	return p.cmd.Process.Pid
}

// signal sends sig and waits up to 10 s for the process to end (then
// SIGKILL).
func (p *proc) signal(sig syscall.Signal) {
	p.sampleRSS()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// kill ends the process with SIGKILL.
func (p *proc) kill() { p.signal(syscall.SIGKILL) }

// stop ends the process with SIGTERM.
func (p *proc) stop() { p.signal(syscall.SIGTERM) }

// sampleRSS reads the process's VmHWM (peak resident set) from /proc.
func (p *proc) sampleRSS() {
	pid := p.pid()
	if pid == 0 {
		return
	}
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				p.mu.Lock()
				p.peakRSS = max(p.peakRSS, kb)
				p.mu.Unlock()
			}
		}
	}
}

// crashed lists the exits the driver did not cause.
func (p *proc) crashed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.crashes...)
}

// freePort is a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitFor polls ready every 50 ms until it succeeds, p exits, or 30 s pass.
func waitFor(p *proc, ready func() bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited while starting (log: %s)", p.name, p.log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s was not ready within 30 s (log: %s)", p.name, p.log)
}

// tcpReady reports whether something accepts connections on addr.
func tcpReady(addr string) func() bool {
	return func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
}

// httpReady reports whether url answers 200.
func httpReady(url string) func() bool {
	return func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
}

// startAndWait starts p and waits until ready.
func startAndWait(p *proc, ready func() bool) error {
	if err := p.start(); err != nil {
		return err
	}
	return waitFor(p, ready)
}
