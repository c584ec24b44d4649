package main

import (
	"math/rand/v2"
	"net"
	"sync/atomic"
)

// front is a TCP proxy in front of an instance, which the clients talk
// to: while dropping is set, it loses that share of the instance's
// answers, as a load balancer or a network fault does to a client. The
// request reaches the instance and is done in full; once the instance
// answers, the client's connection is closed instead of passing the
// answer on (HTTP/1.1 answers a connection's requests in turn, so the
// first bytes back after a request are its answer).
type front struct {
	ln       net.Listener
	target   string
	dropping atomic.Uint32 // percent of answers lost
}

// newFront listens on a free loopback port and forwards to target.
func newFront(target string) (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{ln: ln, target: target}
	go f.serve()
	return f, nil
}

// url is the front's base URL.
func (f *front) url() string { return "http://" + f.ln.Addr().String() }

func (f *front) close() { _ = f.ln.Close() }

func (f *front) serve() {
	for {
		client, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.relay(client)
	}
}

// relay passes one client connection's bytes to the instance and back,
// losing an answer with the dropping share.
func (f *front) relay(client net.Conn) {
	server, err := net.Dial("tcp", f.target)
	if err != nil {
		_ = client.Close()
		return
	}
	var lose atomic.Bool // the answer to the request just passed on is lost
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				lose.Store(rand.Uint32N(100) < f.dropping.Load())
				if _, werr := server.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = server.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 && lose.Load() {
			break // the answer is lost: the client sees its connection close
		}
		if n > 0 {
			if _, werr := client.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = client.Close()
	_ = server.Close()
}
