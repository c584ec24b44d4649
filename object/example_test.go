package object_test

import (
	"encoding/hex"
	"fmt"

	"github.com/monty-go/monty/object"
)

func Example() {
	type Order struct {
		ID    int      `json:"id"`
		Items []string `json:"items"`
		Note  string   `json:"note,omitempty"`
	}
	v, err := object.FromGo(Order{ID: 7, Items: []string{"tea", "milk"}})
	if err != nil {
		panic(err)
	}
	wire, err := object.Encode(v)
	if err != nil {
		panic(err)
	}
	fmt.Println(hex.EncodeToString(wire))

	back, err := object.Decode(wire)
	if err != nil {
		panic(err)
	}
	fmt.Println(object.Repr(back))
	// Output:
	// d99c418462696407656974656d738263746561646d696c6b
	// {'id': 7, 'items': ['tea', 'milk']}
}

func ExampleInto() {
	// A dataclass instance as the interpreter might return it.
	v := object.Instance{
		Class: object.ClassType{Name: "Point", IsDataclass: true},
		Attrs: []object.Pair{
			{Key: object.Str("x"), Value: object.Int(3)},
			{Key: object.Str("y"), Value: object.Float(4.5)},
		},
	}
	var p struct {
		X int     `json:"x"`
		Y float64 `json:"y"`
	}
	if err := object.Into(v, &p); err != nil {
		panic(err)
	}
	fmt.Printf("%+v %s\n", p, object.Repr(v))

	var small []int8
	err := object.Into(object.List{object.Int(1), object.Int(300)}, &small)
	fmt.Println(err)
	// Output:
	// {X:3 Y:4.5} Point(x=3, y=4.5)
	// cannot convert int to int8 at [1]: 300 is out of range
}

func ExampleToJSON() {
	v := object.Dict{
		{Key: object.Str("ok"), Value: object.Bool(true)},
		{Key: object.Str("ratio"), Value: object.Float(1)},
	}
	b, _ := object.ToJSON(v)
	fmt.Println(string(b))

	_, err := object.ToJSON(object.List{object.Bytes("x")})
	fmt.Println(err)
	// Output:
	// {"ok":true,"ratio":1.0}
	// object: no JSON form at [0]: bytes has no JSON form
}
