package server_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
	"github.com/monty-go/monty/session/protocol/server"
	"github.com/monty-go/monty/session/store/memstore"
)

// rawConn is a WebSocket connection written byte by byte, for frames no
// well-behaved client library sends.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, s *testServer) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.http.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: monty\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Api-Key: "+key+"\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	return &rawConn{Conn: c, r: r}
}

// header is a masked binary frame's header announcing n payload bytes.
func header(n uint64, fin bool) []byte {
	return frameHeader(0x2, n, fin)
}

// frameHeader is a masked frame's header of opcode op.
func frameHeader(op byte, n uint64, fin bool) []byte {
	b := []byte{op, 0x80 | 127}
	if fin {
		b[0] |= 0x80
	}
	b = binary.BigEndian.AppendUint64(b, n)
	return append(b, 1, 2, 3, 4) // mask key
}

// closeFrame reads until the server's close frame and returns its status
// code, or 0 when the connection ends without one. It fails the test if
// neither happens within the wait.
func (c *rawConn) closeFrame(t *testing.T, wait time.Duration) int {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
	for {
		var h [2]byte
		if _, err := io.ReadFull(c.r, h[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("no close frame and the connection still open after %s", wait)
			}
			return 0
		}
		n := int(h[1] & 0x7f)
		switch n {
		case 126:
			var ext [2]byte
			_, _ = io.ReadFull(c.r, ext[:])
			n = int(binary.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			_, _ = io.ReadFull(c.r, ext[:])
			n = int(binary.BigEndian.Uint64(ext[:]))
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(c.r, payload); err != nil {
			return 0
		}
		if h[0]&0x0f == 0x8 && n >= 2 {
			return int(binary.BigEndian.Uint16(payload))
		}
	}
}

// TestOversizedFrameHeadersAreRefusedAtOnce: a frame whose header announces
// 2³¹ bytes, or 300 MB, over a 16 MiB cap, with nothing after it, is
// answered with close 1009 as soon as the header is in, not when the idle
// timeout passes; so is a fragmented message whose frames add up past the
// cap. Another connection goes on meanwhile.
func TestOversizedFrameHeadersAreRefusedAtOnce(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) { o.IdleTimeout = time.Minute })
	good := s.dial(t)
	good.session()
	value(t, good.turn(feed("n = 1")))

	for _, n := range []uint64{1 << 31, 300_000_000, 1 << 63} {
		c := dialRaw(t, s)
		_, err := c.Write(header(n, true))
		require.NoError(t, err)
		assert.Equal(t, 1009, c.closeFrame(t, 10*time.Second), "a header announcing %d bytes", n)
		assert.Equal(t, object.Int(2), value(t, good.turn(feed("n = n + 1\nn"))), "the other session goes on")
		value(t, good.turn(feed("n = 1")))
	}

	// Header bytes sent before the upgrade's answer was read are frames too.
	c, err := net.Dial("tcp", strings.TrimPrefix(s.http.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: monty\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Api-Key: "+key+"\r\n\r\n"+string(header(1<<31, true)))
	require.NoError(t, err)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Equal(t, 1009, (&rawConn{Conn: c, r: r}).closeFrame(t, 10*time.Second), "a header pipelined with the upgrade")

	// Three fragments of 6 MiB: the third brings the message past 16 MiB.
	frag := dialRaw(t, s)
	for i, op := range []byte{0x2, 0x0, 0x0} { // binary, then continuations
		_, err := frag.Write(frameHeader(op, 6<<20, false))
		require.NoError(t, err)
		if i < 2 {
			_, err = frag.Write(make([]byte, 6<<20))
			require.NoError(t, err)
		}
	}
	assert.Equal(t, 1009, frag.closeFrame(t, 10*time.Second), "a fragmented message past the cap")
	assert.Equal(t, object.Int(2), value(t, good.turn(feed("n + 1"))))
}

// TestStalledFramesAreDropped: a frame within the cap whose payload stops
// arriving, and a frame header cut short, end their connection after the
// frame timeout, with the idle timeout far away; another connection is
// served meanwhile.
func TestStalledFramesAreDropped(t *testing.T) {
	s := start(t, memstore.New(memstore.Options{}), func(o *server.Options) {
		o.IdleTimeout, o.FrameTimeout = time.Hour, 300*time.Millisecond
	})
	good := s.dial(t)
	good.session()
	value(t, good.turn(feed("n = 1")))
	for name, bytes := range map[string][]byte{
		"payload stops": append(header(100, true), make([]byte, 10)...),
		"header cut":    header(100, true)[:5],
	} {
		c := dialRaw(t, s)
		_, err := c.Write(bytes)
		require.NoError(t, err)
		assert.Equal(t, 1008, c.closeFrame(t, 10*time.Second), name)
		assert.Equal(t, object.Int(2), value(t, good.turn(feed("n + 1"))), name)
	}
}
