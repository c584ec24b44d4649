package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/session"
	"github.com/monty-go/monty/session/store"
	"github.com/monty-go/monty/session/store/memstore"
)

// viewJSON is the stored JSON view, re-encoded so it compares as text.
func viewJSON(t *testing.T, s *session.Session) string {
	t.Helper()
	b, err := json.Marshal(s.State())
	require.NoError(t, err)
	return string(b)
}

// The JSON view is kept global by global between calls: it follows
// rebinding, changes made in place to values on the heap, globals that stop
// or start being JSON, and cannot be changed by code that rebinds the
// globals the view's code uses.
func TestViewFollowsEveryChange(t *testing.T) {
	st := memstore.New(memstore.Options{})
	s := open(t, "view", session.Options{Store: st})
	steps := []struct{ code, view string }{
		{"i = 1\nl = [1]\nd = {'k': [1]}\ns = 'a'\ndef f(): pass", `{"d":{"k":[1]},"i":1,"l":[1],"s":"a"}`},
		{"i = 2", `{"d":{"k":[1]},"i":2,"l":[1],"s":"a"}`},
		{"l.append(2)\nd['k'].append(3)", `{"d":{"k":[1,3]},"i":2,"l":[1,2],"s":"a"}`},
		{"s = s + 'b'", `{"d":{"k":[1,3]},"i":2,"l":[1,2],"s":"ab"}`},
		{"f = 5\ni = float('nan')", `{"d":{"k":[1,3]},"f":5,"l":[1,2],"s":"ab"}`},
		{"i = 3\nl = {1, 2}", `{"d":{"k":[1,3]},"f":5,"i":3,"s":"ab"}`},
		{"l = None", `{"d":{"k":[1,3]},"f":5,"i":3,"l":null,"s":"ab"}`},
		{"__monty_json = None\n__monty_view_out = ['666']\ni = 4", `{"d":{"k":[1,3]},"f":5,"i":4,"l":null,"s":"ab"}`},
		{"def f(): pass", `{"d":{"k":[1,3]},"i":4,"l":null,"s":"ab"}`},
		{"if i == 0:\n    late = 1\nafter = 1", `{"after":1,"d":{"k":[1,3]},"i":4,"l":null,"s":"ab"}`},
		{"late = 2", `{"after":1,"d":{"k":[1,3]},"i":4,"l":null,"late":2,"s":"ab"}`},
	}
	for _, step := range steps {
		res := exec(t, s, step.code)
		require.Nil(t, res.Err, step.code)
		assert.JSONEq(t, step.view, viewJSON(t, s), step.code)
	}
	assert.Equal(t, []string{"after", "d", "f", "i", "l", "late", "s"}, s.Globals())
	kept := storedNames(t, st, "view")

	// A session that loads the state starts its own view afresh, and the
	// same view and names (in the same order) come out.
	other := open(t, "view", session.Options{Store: st})
	res, err := other.Exec(context.Background(), "None")
	require.NoError(t, err)
	require.Nil(t, res.Err)
	assert.JSONEq(t, steps[len(steps)-1].view, viewJSON(t, other))
	assert.Equal(t, kept, storedNames(t, st, "view"))
}

// storedNames are the global names a stored state lists, in its order.
func storedNames(t *testing.T, st store.Store, id string) []string {
	t.Helper()
	obj, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	info, err := session.Inspect(obj.Data, nil)
	require.NoError(t, err)
	return info.Globals
}
