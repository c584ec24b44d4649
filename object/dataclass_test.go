package object_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/monty-go/monty/object"
)

type dcAddress struct {
	City string `json:"city"`
	Zip  string `json:"zip,omitempty"`
}

type dcPerson struct {
	Name    string         `json:"name"`
	Age     int            `json:"age"`
	Email   *string        `json:"email"`
	Home    dcAddress      `json:"home"`
	Past    []dcAddress    `json:"past"`
	Tags    map[string]int `json:"tags"`
	private int
}

func TestDataclassFromGo(t *testing.T) {
	v, err := object.Dataclass(dcPerson{Name: "Ada", Age: 36, Home: dcAddress{City: "London"},
		Past: []dcAddress{{City: "Paris", Zip: "75"}}, Tags: map[string]int{"x": 1}})
	require.NoError(t, err)
	in, ok := v.(object.Instance)
	require.True(t, ok, "a struct becomes an instance, not a dict: %#v", v)
	assert.Equal(t, "dcPerson", in.Class.Name)
	assert.True(t, in.Class.HostDefined)
	assert.True(t, in.Class.IsDataclass)
	assert.Equal(t, object.GoClassID(reflect.TypeFor[dcPerson]()), in.Class.ID)
	var names []string
	for _, p := range in.Attrs {
		names = append(names, string(p.Key.(object.Str)))
	}
	assert.Equal(t, []string{"name", "age", "email", "home", "past", "tags"}, names, "json names, declaration order, every field")
	email, _ := in.Field("email")
	assert.Equal(t, object.None{}, email, "a nil pointer is None")
	home, _ := in.Field("home")
	homeIn, ok := home.(object.Instance)
	require.True(t, ok, "nested structs are dataclasses too")
	zip, _ := homeIn.Field("zip")
	assert.Equal(t, object.Str(""), zip, "omitempty does not drop a dataclass field")
	past, _ := in.Field("past")
	assert.IsType(t, object.Instance{}, past.(object.List)[0])
	tags, _ := in.Field("tags")
	assert.IsType(t, object.Dict{}, tags, "maps stay dicts")

	again, err := object.Dataclass(&dcPerson{})
	require.NoError(t, err)
	assert.Equal(t, in.Class.ID, again.(object.Instance).Class.ID, "one class per Go type")
	assert.NotEqual(t, in.ID, again.(object.Instance).ID, "each instance its own identity")

	// And back.
	var back dcPerson
	require.NoError(t, object.IntoStrict(v, &back))
	assert.Equal(t, dcPerson{Name: "Ada", Age: 36, Home: dcAddress{City: "London"},
		Past: []dcAddress{{City: "Paris", Zip: "75"}}, Tags: map[string]int{"x": 1}}, back)

	_, err = object.Dataclass(struct{ C chan int }{})
	var gve *object.GoValueError
	require.ErrorAs(t, err, &gve)
	assert.Equal(t, ".C", gve.Path)
}

func TestIntoStrictRefusesUnknownFields(t *testing.T) {
	addr := func(extra ...object.Pair) object.Instance {
		return object.Instance{Class: object.ClassType{Name: "dcAddress", IsDataclass: true},
			Attrs: append([]object.Pair{{Key: object.Str("city"), Value: object.Str("Oslo")}}, extra...)}
	}
	person := func(home object.Value) object.Dict {
		return object.Dict{{Key: object.Str("name"), Value: object.Str("Bo")}, {Key: object.Str("home"), Value: home}}
	}
	var p dcPerson
	require.NoError(t, object.IntoStrict(person(addr()), &p))
	assert.Equal(t, "Oslo", p.Home.City)

	err := object.IntoStrict(person(addr(object.Pair{Key: object.Str("country"), Value: object.Str("NO")})), &p)
	var ce *object.ConversionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "['home']", ce.Path)
	assert.Contains(t, ce.Detail, `unknown field "country"`)
	assert.Contains(t, ce.Detail, "city, zip", "names the fields the struct has")

	err = object.IntoStrict(object.Dict{{Key: object.Str("nmae"), Value: object.Str("typo")}}, &p)
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Detail, `unknown field "nmae"`)

	var list []dcAddress
	err = object.IntoStrict(object.List{addr(), addr(object.Pair{Key: object.Str("x"), Value: object.Int(1)})}, &list)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "[1]", ce.Path)

	// Into itself still ignores them, as encoding/json does.
	require.NoError(t, object.Into(object.Dict{{Key: object.Str("nmae"), Value: object.Str("typo")}}, &p))
	assert.Error(t, object.IntoStrict(object.Int(1), p), "needs a pointer")
}
