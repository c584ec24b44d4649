package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/agent"
	"github.com/monty-go/monty/session/store/memstore"
)

// malformed is every kind of line the transport answers itself: the line,
// the error code and the id of the answer (code 0: no answer).
var malformed = []struct {
	name string
	line string
	code int
	id   string
}{
	{"not JSON", `junk`, -32700, "null"},
	{"NUL byte", "{\"jsonrpc\":\"2.0\",\x00\"id\":1,\"method\":\"ping\"}", -32700, "null"},
	{"NUL only", "\x00", -32700, "null"},
	{"truncated", `{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "null"},
	{"two values", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, -32700, "null"},
	{"invalid UTF-8", "\xff\xfe", -32700, "null"},
	{"byte order mark", "\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", -32700, "null"},
	{"empty object", `{}`, -32600, "null"},
	{"empty array", `[]`, -32600, "null"},
	{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, -32600, "null"},
	{"number", `42`, -32600, "null"},
	{"string", `"ping"`, -32600, "null"},
	{"null", `null`, -32600, "null"},
	{"true", `true`, -32600, "null"},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
	{"jsonrpc missing", `{"id":"a","method":"ping"}`, -32600, `"a"`},
	{"jsonrpc number", `{"jsonrpc":2.0,"id":8,"method":"ping"}`, -32600, "8"},
	{"jsonrpc null", `{"jsonrpc":null,"id":8,"method":"ping"}`, -32600, "8"},
	{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
	{"id array", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "null"},
	{"id bool", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "null"},
	{"id fraction", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "1.5"},
	{"id too big", `{"jsonrpc":"2.0","id":1e300,"method":"ping"}`, -32600, "1e300"},
	{"id null in a request", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null"},
	{"method number", `{"jsonrpc":"2.0","id":9,"method":1}`, -32600, "9"},
	{"method null", `{"jsonrpc":"2.0","id":9,"method":null}`, -32600, "9"},
	{"method missing", `{"jsonrpc":"2.0","id":10}`, -32600, "10"},
	{"notification without method", `{"jsonrpc":"2.0"}`, -32600, "null"},
	{"params string", `{"jsonrpc":"2.0","id":11,"method":"ping","params":"x"}`, -32600, "11"},
	{"params number", `{"jsonrpc":"2.0","id":"p","method":"ping","params":3}`, -32600, `"p"`},
	{"duplicate member", `{"jsonrpc":"2.0","id":12,"method":"ping","method":"tools/list"}`, -32600, "null"},
	{"error member a string", `{"jsonrpc":"2.0","id":13,"method":"ping","error":"x"}`, -32600, "13"},
	{"too deep", `{"jsonrpc":"2.0","id":14,"method":"ping","params":{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`, -32600, "14"},
	{"very deep, not JSON", strings.Repeat("[", 20000), -32600, "null"},
	{"response with result and error", `{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}}`, -32600, "null"},
	{"response with a bad error", `{"jsonrpc":"2.0","id":3,"error":{"code":"1","message":"x"}}`, -32600, "null"},
	{"response without id", `{"jsonrpc":"2.0","result":{}}`, -32600, "null"},
	{"initialize params of the wrong type", `{"jsonrpc":"2.0","id":15,"method":"initialize","params":{"protocolVersion":5}}`, -32602, "15"},
	{"initialize params an array", `{"jsonrpc":"2.0","id":"i","method":"initialize","params":[1]}`, -32602, `"i"`},
	{"initialize without params", `{"jsonrpc":"2.0","id":16,"method":"initialize"}`, -32602, "16"},
	{"line too long", `{"jsonrpc":"2.0","id":17,"method":"ping","params":{"a":"` + strings.Repeat("x", MaxLineLength) + `"}}`, -32600, "null"},
	// Not answered: blank lines, and errors answering lines we could not read.
	{"blank", "   \t", 0, ""},
	{"carriage return", "\r", 0, ""},
	{"error response with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, 0, ""},
}

// pipeClient talks to a server run over NewStdioTransport on pipes.
type pipeClient struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Reader
}

func startPipeServer(t *testing.T) *pipeClient {
	t.Helper()
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
	require.NoError(t, err)
	srv, err := New(Options{Executor: exec})
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), NewStdioTransport(inR, outW, nil)) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		err := <-done
		assert.True(t, err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed), "server: %v", err)
		keeper.Close()
	})
	return &pipeClient{t: t, in: inW, out: bufio.NewReader(outR)}
}

func (c *pipeClient) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(c.t, err)
}

// answer is a JSON-RPC response as the tests read it.
type answer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// recv reads the next message the server writes.
func (c *pipeClient) recv() answer {
	c.t.Helper()
	line, err := c.out.ReadBytes('\n')
	require.NoError(c.t, err)
	var a answer
	require.NoError(c.t, json.Unmarshal(line, &a), "%s", line)
	require.Equal(c.t, "2.0", a.JSONRPC, "%s", line)
	return a
}

// call sends a request with a numeric id and returns its response,
// skipping notifications.
func (c *pipeClient) call(id int, line string) answer {
	c.t.Helper()
	c.send(line)
	for {
		if a := c.recv(); string(a.ID) == strconv.Itoa(id) {
			return a
		}
	}
}

// toolText returns the text of a tools/call result and whether it is a
// tool error.
func toolText(t *testing.T, a answer) (string, bool) {
	t.Helper()
	require.Nil(t, a.Error)
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	require.NoError(t, json.Unmarshal(a.Result, &res))
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.Text)
	}
	return text.String(), res.IsError
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// Every malformed line gets its error (or nothing) and the server keeps
// serving: a whole MCP conversation follows on the same connection.
func TestStdioTransportMalformedLines(t *testing.T) {
	c := startPipeServer(t)
	for _, tc := range malformed {
		c.send(tc.line)
		if tc.code == 0 {
			continue
		}
		a := c.recv()
		require.NotNil(t, a.Error, tc.name)
		assert.Equal(t, tc.code, a.Error.Code, "%s: %s", tc.name, a.Error.Message)
		assert.JSONEq(t, tc.id, string(a.ID), tc.name)
		assert.Nil(t, a.Result, tc.name)
	}
	// The unanswered lines left nothing behind: the next answer is
	// initialize's.
	c.send(initializeLine)
	a := c.recv()
	require.Nil(t, a.Error)
	assert.Equal(t, "1", string(a.ID))
	assert.Contains(t, string(a.Result), `"protocolVersion"`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	a = c.call(2, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	require.Nil(t, a.Error)
	assert.Contains(t, string(a.Result), `"execute_python"`)
	assert.Contains(t, string(a.Result), `"reset_session"`)

	// Well-formed requests the server cannot serve get the errors the
	// spec prescribes, from the SDK.
	for _, tc := range []struct {
		name string
		line string
		code int
	}{
		{"unknown method", `{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`, -32601},
		{"tools/call params an array", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[1,2]}`, -32602},
		{"tools/call name a number", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}`, -32602},
		{"tools/call unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`, -32602},
		{"tools/list cursor a number", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":5}}`, -32602},
	} {
		a = c.call(3, tc.line)
		require.NotNil(t, a.Error, tc.name)
		assert.Equal(t, tc.code, a.Error.Code, "%s: %s", tc.name, a.Error.Message)
	}
	// Unknown notifications are ignored; bad tool arguments are tool
	// errors the model can read.
	c.send(`{"jsonrpc":"2.0","method":"notifications/no_such_thing","params":{"x":1}}`)
	text, isErr := toolText(t, c.call(4, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_python","arguments":"print(1)"}}`))
	assert.True(t, isErr)
	assert.Contains(t, text, "code")
	text, isErr = toolText(t, c.call(5, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"reset_session","arguments":{"session_id":5}}}`))
	assert.True(t, isErr)
	assert.Contains(t, text, "session_id")
	// A huge argument is served like any other.
	code := mustJSON("s = '" + strings.Repeat("a", 1<<20) + "'\nlen(s)")
	text, isErr = toolText(t, c.call(6, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":`+string(code)+`}}}`))
	assert.False(t, isErr, text)
	assert.Equal(t, "1048576", strings.TrimSpace(text))

	// Malformed lines in the middle of a session are answered too.
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_python"`)
	a = c.recv()
	require.NotNil(t, a.Error)
	assert.Equal(t, -32700, a.Error.Code)
	text, isErr = toolText(t, c.call(8, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"s[:3] + '!'"}}}`))
	assert.False(t, isErr, text)
	assert.Equal(t, "'aaa!'", strings.TrimSpace(text))
}

// screenAll runs src through a line reader with the given maximum line
// length, reading a byte at a time, and returns what the SDK would read
// and what the reader answered.
func screenAll(t *testing.T, src io.Reader, maxLine int) (passed, answers string) {
	t.Helper()
	var out bytes.Buffer
	b, err := io.ReadAll(iotest.OneByteReader(newLineReader(src, &out, nil, maxLine)))
	require.NoError(t, err)
	return string(b), out.String()
}

// answerCodes returns the error codes of newline-terminated answers.
func answerCodes(t *testing.T, answers string) []int {
	t.Helper()
	var codes []int
	for _, line := range strings.SplitAfter(answers, "\n") {
		if line == "" {
			continue
		}
		require.True(t, strings.HasSuffix(line, "\n"))
		var a answer
		require.NoError(t, json.Unmarshal([]byte(line), &a))
		require.NotNil(t, a.Error)
		codes = append(codes, a.Error.Code)
	}
	return codes
}

func TestLineReaderPassesValidLines(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	notify := `{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`
	resp := `{"jsonrpc":"2.0","id":"s1","result":{"roots":[]}}`
	errResp := `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no","data":[1]}}`
	in := "  " + ping + " \t\r\n\n\r\n" + notify + "\r\n" + "junk\n" + resp + "\n" + errResp
	passed, answers := screenAll(t, strings.NewReader(in), MaxLineLength)
	assert.Equal(t, ping+"\n"+notify+"\n"+resp+"\n"+errResp+"\n", passed)
	assert.Equal(t, []int{-32700}, answerCodes(t, answers))
}

func TestLineReaderLongLines(t *testing.T) {
	const maxLine = 100 << 10 // longer than the reader's buffer
	line := func(n int) string {
		head, tail := `{"jsonrpc":"2.0","method":"x","params":{"p":"`, `"}}`
		return head + strings.Repeat("y", n-len(head)-len(tail)) + tail
	}
	longest, tooLong := line(maxLine), line(maxLine+1)
	in := longest + "\n" + tooLong + "\r\n" + strings.Repeat("z", 10*maxLine) + "\n" + longest + "\n" + strings.Repeat("[", 3*maxLine)
	var out bytes.Buffer
	lr := newLineReader(strings.NewReader(in), &out, nil, maxLine)
	b, err := io.ReadAll(lr)
	require.NoError(t, err)
	assert.Equal(t, longest+"\n"+longest+"\n", string(b))
	assert.Equal(t, []int{-32600, -32600, -32600}, answerCodes(t, out.String()), "one answer per long line, the last one at the end of input")
	assert.Contains(t, out.String(), "longer than 102400 bytes")
	assert.Less(t, cap(lr.buf), 2*maxLine, "a long line is not held whole")
}

func TestLineReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	// A source error ends the reading, after the lines before it; the
	// partial line is not answered.
	var out bytes.Buffer
	lr := newLineReader(io.MultiReader(strings.NewReader(ping+"\n{\"jsonrpc\""), iotest.ErrReader(boom)), &out, nil, MaxLineLength)
	b, err := io.ReadAll(lr)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, ping+"\n", string(b))
	assert.Empty(t, out.String())

	// So does a failure to write an answer.
	lr = newLineReader(strings.NewReader("junk\n"+ping+"\n"), failWriter{boom}, nil, MaxLineLength)
	_, err = io.ReadAll(lr)
	assert.ErrorIs(t, err, boom)
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// fuzzMaxLine keeps the fuzzer's long lines short.
const fuzzMaxLine = 4096

// FuzzLineReader feeds arbitrary bytes, with a valid request made of
// arbitrary strings in the middle, through the line reader: it must not
// panic, every answer must be a JSON-RPC 2.0 error, the lines it passes on
// are input lines unchanged (the valid request among them) and the SDK's
// own transport reads them all without an error.
func FuzzLineReader(f *testing.F) {
	for _, tc := range malformed {
		if len(tc.line) < 1000 {
			f.Add([]byte(tc.line), "ping", "x", int64(1))
		}
	}
	f.Add([]byte(initializeLine+"\r\njunk\n\n"+`{"jsonrpc":"2.0","id":"a","result":{}}`), "tools/call", "ü\x00\"\\\n", int64(-5))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"p\xffing\",\"params\":{\"n\":1e400}}"), "", "", int64(1<<62))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1e2,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":-0,"method":"ping"}`), "initialize", "", int64(0))
	f.Add([]byte(`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`), "x", "y", int64(-1))
	f.Add([]byte(`{"JSONRPC":"2.0","Id":1,"Method":"ping","jsonrpc":"2.0"}`), "x", "y", int64(2))
	f.Add([]byte(strings.Repeat("x", fuzzMaxLine+10)+"\n"+strings.Repeat(`{"a":`, 65)), "x", "y", int64(3))
	f.Fuzz(func(t *testing.T, data []byte, method, param string, id int64) {
		valid := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%s,"params":{"p":%s}}`, id%(1<<53), mustJSON(method), mustJSON(param))
		input := slices.Concat(data, []byte("\n"+valid+"\n"), data)

		var answers bytes.Buffer
		passed, err := io.ReadAll(newLineReader(bytes.NewReader(input), &answers, nil, fuzzMaxLine))
		require.NoError(t, err)

		var inputLines [][]byte
		for _, line := range bytes.Split(input, []byte("\n")) {
			if line = bytes.Trim(line, jsonSpace); len(line) > 0 {
				inputLines = append(inputLines, line)
			}
		}
		n := 0
		for _, line := range bytes.SplitAfter(answers.Bytes(), []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			n++
			checkAnswer(t, line)
		}
		assert.LessOrEqual(t, n, len(inputLines), "at most one answer per line")

		// The lines passed on are input lines, in order, unchanged.
		require.True(t, len(passed) == 0 || passed[len(passed)-1] == '\n')
		var passedLines [][]byte
		if len(passed) > 0 {
			passedLines = bytes.Split(passed[:len(passed)-1], []byte("\n"))
		}
		i := 0
		for _, line := range passedLines {
			for i < len(inputLines) && !bytes.Equal(inputLines[i], line) {
				i++
			}
			require.Less(t, i, len(inputLines), "passed a line that is not in the input: %q", line)
			i++
		}
		assert.LessOrEqual(t, len(passedLines)+n, len(inputLines))
		if len(valid) <= fuzzMaxLine {
			assert.True(t, slices.ContainsFunc(passedLines, func(l []byte) bool { return string(l) == valid }), "valid request not passed: %s", valid)
		}

		// The SDK takes every line passed on.
		conn, err := (&mcp.IOTransport{Reader: io.NopCloser(bytes.NewReader(passed)), Writer: nopWriteCloser{}, MaxLineLength: -1}).Connect(context.Background())
		require.NoError(t, err)
		defer conn.Close()
		for range passedLines {
			_, err := conn.Read(context.Background())
			require.NoError(t, err)
		}
		_, err = conn.Read(context.Background())
		require.ErrorIs(t, err, io.EOF)
	})
}

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// checkAnswer checks that line is a JSON-RPC 2.0 error response, strictly.
func checkAnswer(t *testing.T, line []byte) {
	t.Helper()
	require.True(t, bytes.HasSuffix(line, []byte("\n")))
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &m), "%q", line)
	require.ElementsMatch(t, []string{"jsonrpc", "id", "error"}, slices.Collect(maps.Keys(m)), "%q", line)
	assert.Equal(t, `"2.0"`, string(m["jsonrpc"]))
	switch m["id"][0] {
	case 'n', '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
	default:
		t.Fatalf("answer id %s", m["id"])
	}
	var e map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(m["error"], &e), "%q", line)
	require.ElementsMatch(t, []string{"code", "message"}, slices.Collect(maps.Keys(e)), "%q", line)
	assert.Contains(t, []string{"-32700", "-32600", "-32602"}, string(e["code"]))
	var message string
	require.NoError(t, json.Unmarshal(e["message"], &message))
	assert.Regexp(t, `^(Parse error|Invalid Request|Invalid params): `, message)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// A one-shot client writes its requests and closes its end at once: every
// request read before the end of input is still answered, in the ids the
// client used (an integer written as 3.0 is answered as 3), and the
// server then ends cleanly.
func TestStdioTransportAnswersAllAtEndOfInput(t *testing.T) {
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	defer keeper.Close()
	exec, err := agent.NewExecutor(agent.ExecutorOptions{Keeper: keeper})
	require.NoError(t, err)
	srv, err := New(Options{Executor: exec})
	require.NoError(t, err)
	input := strings.Join([]string{
		initializeLine,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		// Long enough that the input ends while it runs.
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"n = 0\nfor i in range(300000):\n    n += i\nn"}}}`,
		`{"jsonrpc":"2.0","id":3.0,"method":"tools/call","params":{"name":"execute_python","arguments":{"code":"print('x')","session_id":"other"}}}`,
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`,
		`junk`,
	}, "\n") + "\n"
	var out bytes.Buffer
	err = srv.Run(context.Background(), NewStdioTransport(strings.NewReader(input), &syncBuffer{b: &out}, nil))
	assert.True(t, err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed), "server: %v", err)
	answers := map[string]answer{}
	for line := range strings.Lines(out.String()) {
		var a answer
		require.NoError(t, json.Unmarshal([]byte(line), &a), line)
		answers[string(a.ID)] = a
	}
	require.Len(t, answers, 5, out.String()) // 1, 2, 3, "p" and null for the junk line
	text, isErr := toolText(t, answers["2"])
	assert.False(t, isErr)
	assert.Equal(t, "44999850000", text)
	text, _ = toolText(t, answers["3"])
	assert.Equal(t, "x", text)
	assert.Nil(t, answers[`"p"`].Error)
	assert.Equal(t, -32700, answers["null"].Error.Code)
}

// syncBuffer is a bytes.Buffer the server may write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// The end of input waits for the answers of the requests passed on, but
// not for one the client cancelled, and closing the reader ends the wait.
func TestLineReaderWaitsForAnswers(t *testing.T) {
	// start hands the SDK's side every line of input (as the SDK reads
	// them before answering), then reads on to the end in the background.
	start := func(input string) (*lineReader, *syncWriter, chan error) {
		open := newInflight()
		w := &syncWriter{w: io.Discard, open: open}
		lr := newLineReader(strings.NewReader(input), w, nil, MaxLineLength)
		lr.open = open
		buf := make([]byte, 1<<10)
		for range strings.Count(input, "\n") {
			_, err := lr.Read(buf)
			require.NoError(t, err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := lr.Read(buf)
			done <- err
		}()
		return lr, w, done
	}
	notDone := func(done chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("the end of input did not wait for %s: %v", what, err)
		default:
		}
	}

	_, w, done := start(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\n")
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"))
	// A request the server sends is no answer.
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"a","method":"roots/list"}` + "\n"))
	notDone(done, `request "a"`)
	_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n"))
	require.ErrorIs(t, <-done, io.EOF)

	_, _, done = start(`{"jsonrpc":"2.0","id":8,"method":"tools/call"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}` + "\n")
	require.ErrorIs(t, <-done, io.EOF)

	lr, _, done := start(`{"jsonrpc":"2.0","id":9,"method":"tools/call"}` + "\n")
	notDone(done, "request 9")
	require.NoError(t, lr.Close())
	require.ErrorIs(t, <-done, io.EOF)
}
