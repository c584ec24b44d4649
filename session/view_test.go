package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
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

// None, bools and ints held inline are written into the view by the host
// from their marks, without running code: the text Monty's json.dumps
// writes, to the last digit of the extreme ints, on the first view and
// after rebinding.
func TestViewOfInlineScalars(t *testing.T) {
	s := open(t, "scalars", session.Options{Store: memstore.New(memstore.Options{})})
	res := exec(t, s, "a = 0\nb = -1\nc = 9223372036854775807\nd = -9223372036854775807 - 1\ne = True\nf = False\ng = None\nh = c + 1")
	require.Nil(t, res.Err)
	assert.Equal(t, map[string]any{
		"a": json.Number("0"), "b": json.Number("-1"), "c": json.Number("9223372036854775807"),
		"d": json.Number("-9223372036854775808"), "e": true, "f": false, "g": nil, "h": json.Number("9223372036854775808"),
	}, s.State())
	res = exec(t, s, "import json\njson.dumps([a, b, c, d, e, f, g])")
	require.Nil(t, res.Err)
	assert.Equal(t, object.Str("[0, -1, 9223372036854775807, -9223372036854775808, true, false, null]"), res.Value)

	res = exec(t, s, "b = b - 1\ne = not e\ng = 7\na = None")
	require.Nil(t, res.Err)
	got := s.State()
	assert.Equal(t, []any{nil, json.Number("-2"), false, json.Number("7")}, []any{got["a"], got["b"], got["e"], got["g"]})
}
