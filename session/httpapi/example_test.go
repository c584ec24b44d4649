package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/httpapi"
	"github.com/monty-go/monty/session/store/memstore"
)

// Example serves the API and runs two calls in one session.
func Example() {
	// One keeper of live sessions per process, shared by its surfaces.
	keeper := session.NewManager(session.Options{Store: memstore.New(memstore.Options{})}, session.ManagerOptions{})
	defer keeper.Close()
	h, err := httpapi.New(httpapi.Options{
		Keeper:  keeper,
		Session: session.Options{SigningKey: []byte("a secret of 16 bytes or more")},
		APIKeys: []string{"my-api-key"},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	post := func(body string) string {
		req, _ := http.NewRequest("POST", srv.URL+"/exec", strings.NewReader(body))
		req.Header.Set("x-api-key", "my-api-key")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return string(data)
	}
	post(`{"code": "x = [1, 2, 3]", "session_id": "demo"}`)
	out := post(`{"code": "print(sum(x))\nlen(x)", "session_id": "demo"}`)
	fmt.Println(strings.Contains(out, `"stdout":"6\n"`), strings.Contains(out, `"result":3`))
	// Output: true true
}
