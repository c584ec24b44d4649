package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineLength is the longest input line, in bytes without its newline,
// that NewStdioTransport accepts. A longer line is answered with an
// Invalid Request error and skipped without being held in memory whole.
const MaxLineLength = 16 << 20

// MaxDepth is the deepest nesting of JSON objects and arrays in an input
// line that NewStdioTransport accepts; a deeper line is answered with an
// Invalid Request error.
const MaxDepth = 64

// JSON-RPC 2.0 error codes the transport answers malformed lines with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
)

// jsonSpace is the whitespace JSON allows around a value.
const jsonSpace = " \t\r\n"

// logPrefix is how many bytes of a rejected line are logged.
const logPrefix = 64

// NewStdioTransport returns a transport for newline-delimited JSON-RPC
// over r and w (`monty mcp` passes stdin and stdout), like
// mcp.IOTransport, except that a malformed input line does not end the
// connection. Every line is checked before the SDK sees it:
//
//   - blank lines are ignored;
//   - a line that is not JSON (NUL bytes, truncated text, two values on
//     one line) is answered with a -32700 Parse error, id null;
//   - a JSON value that is not a JSON-RPC 2.0 message the way MCP uses it
//     is answered with a -32600 Invalid Request error: a scalar, an array
//     (MCP's current revision has no batches), a missing or wrong
//     "jsonrpc", an id that is not a string or an integer (null included,
//     for a request), a method that is not a string, params that are not
//     an object or an array (null is taken as absent), a malformed
//     response, nesting deeper than MaxDepth, a line longer than
//     MaxLineLength;
//   - an initialize request whose params have the wrong shape is answered
//     with -32602 Invalid params;
//   - an error response with a null id (the peer's answer to a line it
//     could not read) is dropped, as JSON-RPC forbids answering responses;
//   - every other line is passed on to the SDK unchanged, but for the
//     whitespace around it.
//
// At the end of the input the transport does not end the connection at
// once: it waits until every request already passed on has been answered
// (each within its own limits; a request the client cancelled with
// notifications/cancelled is not waited for), so that a one-shot client
// (`printf … | monty mcp`) gets every answer. Closing the connection stops
// the wait.
//
// An answer carries the request's id when it has a usable one (never a
// response's), else null. Each rejected line is logged at warn level on
// logger (nil logs nothing) with the reason and the line's first bytes.
// The answers and the SDK's own messages are written to w a whole line at
// a time under one lock, so they never interleave. Closing the transport's
// connection closes neither r nor w.
func NewStdioTransport(r io.Reader, w io.Writer, logger *slog.Logger) mcp.Transport {
	open := newInflight()
	sw := &syncWriter{w: w, open: open}
	lr := newLineReader(r, sw, logger, MaxLineLength)
	lr.open = open
	return &mcp.IOTransport{
		Reader: lr,
		Writer: sw,
		// The line reader already bounds each frame (and hands the SDK
		// one line at a time), so the SDK's own cap is not needed; its
		// failure would end the connection.
		MaxLineLength: -1,
	}
}

// syncWriter serialises writes: each Write is one whole line, from the
// SDK or from the line reader. A line that answers a request in open
// settles it.
type syncWriter struct {
	mu   sync.Mutex
	w    io.Writer
	open *inflight // nil: nothing tracked
}

func (s *syncWriter) Write(p []byte) (int, error) {
	if s.open != nil {
		// Settled even when the write fails: the answer will not come.
		defer s.open.settle(answeredID(p))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// answeredID is the id of the request a written message answers, in
// canonical form (idKey), or "" when it is not a response.
func answeredID(line []byte) string {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != nil || len(msg.ID) == 0 {
		return ""
	}
	return idKey(msg.ID)
}

// idKey is the canonical form of a JSON-RPC id, the same for the id a
// request was read with and the id the SDK writes back: a string
// re-encoded, an integer in decimal (the SDK answers 1.0 as 1).
func idKey(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		out, _ := json.Marshal(s)
		return string(out)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return ""
	}
	return strconv.FormatInt(int64(f), 10)
}

// inflight counts the requests passed on to the SDK and not yet answered,
// by id, so that the end of input can wait for their answers. It is safe
// for concurrent use.
type inflight struct {
	mu     sync.Mutex
	ids    map[string]int
	idle   chan struct{} // closed while nothing is in flight
	closed chan struct{} // closed when the connection is
	once   sync.Once
}

func newInflight() *inflight {
	idle := make(chan struct{})
	close(idle)
	return &inflight{ids: map[string]int{}, idle: idle, closed: make(chan struct{})}
}

// add records a request passed on.
func (f *inflight) add(id string) {
	if id == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ids) == 0 {
		f.idle = make(chan struct{})
	}
	f.ids[id]++
}

// settle records an answer to (or the cancellation of) request id.
func (f *inflight) settle(id string) {
	if id == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.ids[id]
	switch {
	case !ok:
		return
	case n > 1:
		f.ids[id] = n - 1
		return
	}
	delete(f.ids, id)
	if len(f.ids) == 0 {
		close(f.idle)
	}
}

// wait returns once nothing is in flight or the connection is closed.
func (f *inflight) wait() {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
	case <-f.closed:
	}
}

// close ends every wait.
func (f *inflight) close() { f.once.Do(func() { close(f.closed) }) }

// Close does nothing: the writer belongs to the caller.
func (s *syncWriter) Close() error { return nil }

// lineReader is the io.ReadCloser the SDK reads from: the valid lines of
// its source, each ending in a newline, one line per Read at most.
// Malformed lines are answered on out and skipped. It is read by one
// goroutine at a time.
type lineReader struct {
	src     *bufio.Reader
	out     io.Writer
	log     *slog.Logger
	maxLine int
	open    *inflight // requests passed on; nil: the end of input does not wait

	buf     []byte // the line being read; reused
	pending []byte // the rest of the line being handed over
	err     error  // the source's error, returned once pending is empty
}

func newLineReader(r io.Reader, out io.Writer, logger *slog.Logger, maxLine int) *lineReader {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &lineReader{src: bufio.NewReaderSize(r, 64<<10), out: out, log: logger, maxLine: maxLine}
}

// Close ends a wait for answers at the end of input; the source belongs
// to the caller and stays open.
func (r *lineReader) Close() error {
	if r.open != nil {
		r.open.close()
	}
	return nil
}

func (r *lineReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			if r.err == io.EOF && r.open != nil {
				// The input is over: let the requests read so far be
				// answered before the SDK ends the connection.
				r.open.wait()
			}
			return 0, r.err
		}
		line, size, err := r.readLine()
		if err != nil {
			r.err = err
			if err != io.EOF {
				// A broken source: what was read of the line is no line.
				return 0, err
			}
		}
		if size > r.maxLine {
			reason := fmt.Sprintf("line longer than %d bytes", r.maxLine)
			if werr := r.reject(codeInvalidRequest, nil, "Invalid Request: "+reason, reason, line, size); werr != nil {
				r.err = werr
			}
			continue
		}
		if werr := r.screen(line); werr != nil {
			r.err = werr
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// readLine reads the next line without its newline. size is the line's
// full length; when it exceeds maxLine, line holds only its start and the
// rest was discarded. err is the source's error (io.EOF at its end), which
// may come with a last line.
func (r *lineReader) readLine() (line []byte, size int, err error) {
	if cap(r.buf) > 1<<20 {
		r.buf = nil // do not keep a huge line's buffer for the next ones
	}
	r.buf = r.buf[:0]
	for {
		chunk, err := r.src.ReadSlice('\n')
		full := err == nil
		if full {
			chunk = chunk[:len(chunk)-1]
		}
		size += len(chunk)
		if size <= r.maxLine {
			r.buf = append(r.buf, chunk...)
		} else if len(r.buf) < logPrefix {
			r.buf = append(r.buf, chunk[:min(len(chunk), logPrefix-len(r.buf))]...)
		}
		switch {
		case full:
			return r.buf, size, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return r.buf, size, err
		}
	}
}

// screen checks one line: a valid message becomes pending, anything else
// is answered (or dropped) and logged. The error is the answer's write
// error.
func (r *lineReader) screen(line []byte) error {
	msg := bytes.Trim(line, jsonSpace)
	if len(msg) == 0 {
		return nil
	}
	v := check(msg)
	switch {
	case v.ok:
		r.pending = append(msg, '\n') // msg is a prefix of r.buf: no copy
		if r.open != nil {
			r.open.add(v.request)
			r.open.settle(v.cancelled)
		}
		return nil
	case v.drop:
		r.log.Warn("mcp: dropped input line", "reason", v.reason, "bytes", len(line), "prefix", prefix(line))
		return nil
	}
	message := "Invalid Request: " + v.reason
	switch v.code {
	case codeParseError:
		message = "Parse error: " + v.reason
	case codeInvalidParams:
		message = "Invalid params: " + v.reason
	}
	return r.reject(v.code, v.id, message, v.reason, line, len(line))
}

// reject answers a line with a JSON-RPC error and logs it.
func (r *lineReader) reject(code int, id json.RawMessage, message, reason string, line []byte, size int) error {
	r.log.Warn("mcp: rejected input line", "code", code, "reason", reason, "bytes", size, "prefix", prefix(line))
	if id == nil {
		id = json.RawMessage("null")
	}
	out, err := json.Marshal(errorResponse{
		JSONRPC: "2.0",
		ID:      id,
		Error:   wireError{Code: code, Message: message},
	})
	if err != nil { // cannot happen: id was checked
		return err
	}
	_, err = r.out.Write(append(out, '\n'))
	return err
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   wireError       `json:"error"`
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// prefix is what the log shows of a rejected line.
func prefix(line []byte) string {
	if len(line) > logPrefix {
		return string(line[:logPrefix]) + "…"
	}
	return string(line)
}

// verdict is what check decided about a line.
type verdict struct {
	ok        bool            // pass it on
	request   string          // and it is a request with this id (idKey)
	cancelled string          // or it cancels the request with this id
	drop      bool            // skip it without an answer
	code      int             // else answer with this code
	id        json.RawMessage // and this id (nil: null)
	reason    string
}

func invalid(id json.RawMessage, format string, args ...any) verdict {
	return verdict{code: codeInvalidRequest, id: id, reason: fmt.Sprintf(format, args...)}
}

// check decides whether msg, a line without surrounding whitespace, is a
// JSON-RPC 2.0 message the SDK can take.
func check(msg []byte) verdict {
	depth := nesting(msg)
	valid := json.Valid(msg)
	// encoding/json gives up beyond 10000 levels; such lines are reported
	// as too deep rather than as syntax errors.
	if !valid && depth <= 10000 {
		return verdict{code: codeParseError, reason: syntaxError(msg)}
	}
	isObject := valid && msg[0] == '{'
	var (
		members  map[string]json.RawMessage
		dup      string
		rawID    json.RawMessage
		hasID    bool
		id       json.RawMessage // the id to answer with
		idErr    string
		response bool // a result or an error and no method
	)
	if isObject {
		members, dup = objectMembers(msg)
		if rawID, hasID = members["id"]; hasID {
			id, idErr = checkID(rawID)
		}
		_, hasMethod := members["method"]
		_, hasResult := members["result"]
		_, hasError := members["error"]
		response = !hasMethod && (hasResult || hasError)
		if response || dup != "" {
			// A response's id is one of ours, and with duplicates it is
			// unclear which id is meant: never echo either.
			id = nil
		}
	}
	if depth > MaxDepth {
		return invalid(id, "JSON nested deeper than %d levels", MaxDepth)
	}
	switch {
	case isObject:
	case msg[0] == '[':
		return invalid(nil, "JSON-RPC batches (arrays) are not supported: MCP's current revision (2025-06-18 and later) removed them; send one message per line")
	default:
		return invalid(nil, "a JSON-RPC message must be a JSON object")
	}
	if dup != "" {
		return invalid(nil, "duplicate member %q", dup)
	}
	version, ok := members["jsonrpc"]
	if !ok {
		return invalid(id, `missing "jsonrpc": "2.0"`)
	}
	var s string
	if version[0] != '"' || json.Unmarshal(version, &s) != nil || s != "2.0" {
		return invalid(id, `"jsonrpc" must be exactly "2.0"`)
	}
	if idErr != "" {
		return invalid(id, "%s", idErr)
	}
	// The SDK decodes "error" whatever the message, so a malformed one
	// would end the connection.
	if rawErr, ok := members["error"]; ok && (response || string(rawErr) != "null") && !validError(rawErr) {
		return invalid(id, `"error" must be an object with an integer "code" and a string "message"`)
	}
	if response {
		return checkResponse(members, hasID && string(rawID) != "null")
	}
	method, ok := members["method"]
	if !ok {
		return invalid(id, `missing "method"`)
	}
	var name string
	if method[0] != '"' || json.Unmarshal(method, &name) != nil {
		return invalid(id, `"method" must be a string`)
	}
	if hasID && id == nil {
		return invalid(nil, `an MCP request's "id" must not be null`)
	}
	params, hasParams := members["params"]
	if hasParams {
		switch params[0] {
		case '{', '[':
		case 'n': // null, as some clients send for no params
		default:
			return invalid(id, `"params" must be an object or an array`)
		}
	}
	if name == "initialize" && hasID {
		// The SDK answers a malformed initialize with error code 0
		// rather than Invalid params; the usual mistakes are caught here.
		if reason := checkInitialize(params); reason != "" {
			return verdict{code: codeInvalidParams, id: id, reason: reason}
		}
	}
	if hasID {
		return verdict{ok: true, request: idKey(id)}
	}
	if name == "notifications/cancelled" && len(params) > 0 && params[0] == '{' {
		// MCP: the receiver of a cancellation does not answer the request.
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(params, &p) == nil {
			return verdict{ok: true, cancelled: idKey(p.RequestID)}
		}
	}
	return verdict{ok: true}
}

// checkInitialize checks the shape of initialize's params: an object whose
// protocolVersion is a string and whose capabilities and clientInfo are
// objects (each may be absent or null; the SDK checks the rest).
func checkInitialize(params json.RawMessage) string {
	const want = `initialize needs params {"protocolVersion": string, "capabilities": object, "clientInfo": object}`
	if len(params) == 0 || params[0] != '{' {
		return want
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return want
	}
	for name, kind := range map[string]byte{"protocolVersion": '"', "capabilities": '{', "clientInfo": '{'} {
		if v, ok := fields[name]; ok && v[0] != kind && v[0] != 'n' {
			return want
		}
	}
	return ""
}

// checkResponse checks a message with a result or an error and no method.
func checkResponse(members map[string]json.RawMessage, hasID bool) verdict {
	_, hasResult := members["result"]
	_, hasError := members["error"] // checked by the caller
	if hasResult && hasError {
		return invalid(nil, `a response has either "result" or "error", not both`)
	}
	if !hasID {
		if hasError {
			return verdict{drop: true, reason: "error response with a null id"}
		}
		return invalid(nil, `a response needs the id of its request`)
	}
	return verdict{ok: true}
}

// validError reports whether raw is a JSON-RPC error object: an integer
// code (that fits the SDK's int64) and a string message.
func validError(raw json.RawMessage) bool {
	if raw[0] != '{' {
		return false
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(raw, &e) != nil {
		return false
	}
	code, message := e["code"], e["message"]
	if len(code) == 0 || len(message) == 0 || message[0] != '"' {
		return false
	}
	_, err := strconv.ParseInt(string(code), 10, 64)
	return err == nil
}

// checkID returns raw as the id to echo if it is a valid JSON-RPC id (a
// string, a number or null), and a reason if the SDK cannot take it.
func checkID(raw json.RawMessage) (json.RawMessage, string) {
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, `"id" must be a string or an integer`
		}
		// Re-encoded, so an answer never repeats invalid UTF-8.
		out, _ := json.Marshal(s)
		return out, ""
	case 'n':
		return nil, ""
	case 't', 'f', '{', '[':
		return nil, `"id" must be a string or an integer`
	}
	// A number: the SDK keeps ids as int64 through float64, so only
	// integers it represents exactly keep their identity.
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
		return raw, `a numeric "id" must be an integer of magnitude below 2^53`
	}
	return raw, ""
}

// objectMembers splits a JSON object (known valid) into its members,
// reporting the first duplicate name.
func objectMembers(msg []byte) (map[string]json.RawMessage, string) {
	members := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(msg))
	if _, err := dec.Token(); err != nil { // {
		return members, ""
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			break
		}
		if _, ok := members[name]; ok {
			return members, name
		}
		members[name] = value
	}
	return members, ""
}

// nesting returns the deepest nesting of objects and arrays in msg,
// ignoring brackets inside strings; it does not check the syntax.
func nesting(msg []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range msg {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return deepest
}

// syntaxError describes why msg is not JSON.
func syntaxError(msg []byte) string {
	var v json.RawMessage
	err := json.Unmarshal(msg, &v)
	if err == nil {
		return "not JSON"
	}
	return err.Error()
}
