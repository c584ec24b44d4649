package protocol

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/monty-go/monty/object"
	pb "github.com/monty-go/monty/session/protocol/montypb"
)

// MaxValueNodes bounds the values one message may carry once every shared
// node is counted at each place it is used: monty's values are trees, so
// an arena whose containers point many times at one child is expanded, and a
// few hundred nodes could otherwise describe 2^100 of them.
const MaxValueNodes = 1 << 22

// ErrBadValue reports an arena that does not describe a value Monty accepts:
// an index out of range or pointing forward, nesting deeper than
// object.MaxDepth, an unsupported node, a malformed field.
var ErrBadValue = errors.New("invalid value for Arena")

// ErrOutputOnly reports a repr or cycle node sent as an input: the
// interpreter makes them for values it cannot hand over, and takes none.
var ErrOutputOnly = errors.New("is not a valid input value")

func badValue(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadValue, fmt.Sprintf(format, args...))
}

// arenaBuilder appends values to an arena in post-order.
type arenaBuilder struct {
	nodes []*pb.MontyNode
	// classes maps a class id to its Type node, so every instance of a class
	// in one message shares one node, as upstream's encoder does.
	classes map[object.UUID]uint32
}

// EncodeValues puts vs into one arena and returns it with each value's index.
func EncodeValues(vs ...object.Value) (*pb.Arena, []uint32, error) {
	var b arenaBuilder
	roots := make([]uint32, len(vs))
	for i, v := range vs {
		idx, err := b.add(v)
		if err != nil {
			return nil, nil, err
		}
		roots[i] = idx
	}
	return b.arena(), roots, nil
}

func (b *arenaBuilder) arena() *pb.Arena {
	return &pb.Arena{NodeCount: uint32(len(b.nodes)), Nodes: b.nodes}
}

func (b *arenaBuilder) push(n *pb.MontyNode) uint32 {
	b.nodes = append(b.nodes, n)
	return uint32(len(b.nodes) - 1)
}

func (b *arenaBuilder) addAll(vs []object.Value) ([]uint32, error) {
	out := make([]uint32, len(vs))
	for i, v := range vs {
		idx, err := b.add(v)
		if err != nil {
			return nil, err
		}
		out[i] = idx
	}
	return out, nil
}

func (b *arenaBuilder) addPairs(ps []object.Pair) (*pb.NodePairs, error) {
	out := &pb.NodePairs{Pairs: make([]*pb.NodePair, len(ps))}
	for i, p := range ps {
		k, err := b.add(p.Key)
		if err != nil {
			return nil, err
		}
		v, err := b.add(p.Value)
		if err != nil {
			return nil, err
		}
		out.Pairs[i] = &pb.NodePair{Key: k, Value: v}
	}
	return out, nil
}

func (b *arenaBuilder) addClass(c object.ClassType) (uint32, error) {
	if idx, ok := b.classes[c.ID]; ok {
		return idx, nil
	}
	attrs, err := b.addPairs(c.Attrs)
	if err != nil {
		return 0, err
	}
	origin := pb.TypeOrigin_TYPE_ORIGIN_SANDBOX
	if c.HostDefined {
		origin = pb.TypeOrigin_TYPE_ORIGIN_HOST
	}
	idx := b.push(&pb.MontyNode{Kind: &pb.MontyNode_Type{Type: &pb.Type{
		Name: c.Name, Id: uuidPB(c.ID), Origin: origin, IsDataclass: c.IsDataclass, Attrs: attrs,
	}}})
	if b.classes == nil {
		b.classes = map[object.UUID]uint32{}
	}
	b.classes[c.ID] = idx
	return idx, nil
}

func uuidPB(id object.UUID) *pb.Uuid { return &pb.Uuid{Data: id[:]} }

// add appends v (children first) and returns its index.
func (b *arenaBuilder) add(v object.Value) (uint32, error) {
	var n pb.MontyNode
	switch v := v.(type) {
	case nil, object.None:
		n.Kind = &pb.MontyNode_None{None: &pb.Unit{}}
	case object.Ellipsis:
		n.Kind = &pb.MontyNode_Ellipsis{Ellipsis: &pb.Unit{}}
	case object.NotImplemented:
		n.Kind = &pb.MontyNode_NotImplemented{NotImplemented: &pb.Unit{}}
	case object.Bool:
		n.Kind = &pb.MontyNode_Boolean{Boolean: bool(v)}
	case object.Int:
		n.Kind = &pb.MontyNode_Int{Int: int64(v)}
	case object.BigInt:
		if v.Big.IsInt64() {
			n.Kind = &pb.MontyNode_Int{Int: v.Big.Int64()}
		} else {
			n.Kind = &pb.MontyNode_Bigint{Bigint: &pb.BigInt{Negative: v.Big.Sign() < 0, Magnitude: new(big.Int).Abs(v.Big).Bytes()}}
		}
	case object.Float:
		n.Kind = &pb.MontyNode_Float{Float: float64(v)}
	case object.Str:
		n.Kind = &pb.MontyNode_Str{Str: string(v)}
	case object.Bytes:
		n.Kind = &pb.MontyNode_Bytes{Bytes: []byte(v)}
	case object.List:
		items, err := b.addAll(v)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_List{List: &pb.Indexes{Items: items}}
	case object.Tuple:
		items, err := b.addAll(v)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_Tuple{Tuple: &pb.Indexes{Items: items}}
	case object.Set:
		items, err := b.addAll(v)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_Set{Set: &pb.Indexes{Items: items}}
	case object.FrozenSet:
		items, err := b.addAll(v)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_FrozenSet{FrozenSet: &pb.Indexes{Items: items}}
	case object.Dict:
		pairs, err := b.addPairs(v)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_Dict{Dict: pairs}
	case object.NamedTuple:
		items, err := b.addAll(v.Values)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_NamedTuple{NamedTuple: &pb.NamedTupleNode{TypeName: v.TypeName, FieldNames: v.Fields, Values: items}}
	case object.Date, object.DateTime, object.Time, object.TimeDelta, object.TimeZone:
		setTimeNode(&n, v)
	case object.Exception:
		e := &pb.Exception{ExcType: v.Type}
		if v.HasMessage {
			e.Arg = &v.Message
		}
		n.Kind = &pb.MontyNode_Exception{Exception: e}
	case object.TypeObject:
		n.Kind = &pb.MontyNode_Type{Type: &pb.Type{Name: string(v), Origin: pb.TypeOrigin_TYPE_ORIGIN_BUILTIN}}
	case object.ClassType:
		return b.addClass(v)
	case object.Instance, object.Module:
		return b.addObject(v)
	case object.Function:
		n.Kind = &pb.MontyNode_Function{Function: &pb.Function{Name: v.Name, Docstring: v.Doc}}
	case object.BuiltinFunction:
		n.Kind = &pb.MontyNode_BuiltinFunction{BuiltinFunction: string(v)}
	case object.Path:
		n.Kind = &pb.MontyNode_Path{Path: string(v)}
	case object.File:
		n.Kind = &pb.MontyNode_FileHandle{FileHandle: &pb.FileHandle{Path: v.Path, Mode: v.Mode, Position: v.Position}}
	case object.Opaque:
		n.Kind = &pb.MontyNode_Repr{Repr: string(v)}
	case object.Cycle:
		n.Kind = &pb.MontyNode_Cycle{Cycle: string(v)}
	case object.Complex:
		re, im := v.Real, v.Imag
		n.Kind = &pb.MontyNode_Complex{Complex: &pb.Complex{Real: &re, Imag: &im}}
	case object.Decimal:
		n.Kind = &pb.MontyNode_Decimal{Decimal: string(v)}
	default:
		return 0, fmt.Errorf("monty.v1: no wire form for %T", v)
	}
	return b.push(&n), nil
}

// addObject appends an instance or a module, with its attributes.
func (b *arenaBuilder) addObject(v object.Value) (uint32, error) {
	var n pb.MontyNode
	switch v := v.(type) {
	case object.Instance:
		class, err := b.addClass(v.Class)
		if err != nil {
			return 0, err
		}
		attrs, err := b.addPairs(v.Attrs)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_ClassInstance{ClassInstance: &pb.ClassInstanceNode{ClassType: class, InstanceId: uuidPB(v.ID), Attrs: attrs}}
	case object.Module:
		attrs, err := b.addPairs(v.Attrs)
		if err != nil {
			return 0, err
		}
		n.Kind = &pb.MontyNode_Module{Module: &pb.ModuleNode{Name: v.Name, Id: uuidPB(v.ID), Attrs: attrs}}
	}
	return b.push(&n), nil
}

// setTimeNode makes n the node of v, a date, datetime, time, timedelta
// or timezone.
func setTimeNode(n *pb.MontyNode, v object.Value) {
	switch v := v.(type) {
	case object.Date:
		n.Kind = &pb.MontyNode_Date{Date: &pb.Date{Year: int32(v.Year), Month: uint32(v.Month), Day: uint32(v.Day)}}
	case object.DateTime:
		n.Kind = &pb.MontyNode_Datetime{Datetime: &pb.DateTime{
			Year: int32(v.Year), Month: uint32(v.Month), Day: uint32(v.Day),
			Hour: uint32(v.Hour), Minute: uint32(v.Minute), Second: uint32(v.Second), Microsecond: uint32(v.Microsecond),
			OffsetSeconds: int32Ptr(v.Offset), TimezoneName: v.TZName,
		}}
	case object.Time:
		n.Kind = &pb.MontyNode_Time{Time: &pb.Time{
			Hour: uint32(v.Hour), Minute: uint32(v.Minute), Second: uint32(v.Second), Microsecond: uint32(v.Microsecond),
			OffsetSeconds: int32Ptr(v.Offset), TimezoneName: v.TZName, Fold: uint32(v.Fold),
		}}
	case object.TimeDelta:
		n.Kind = &pb.MontyNode_Timedelta{Timedelta: &pb.TimeDelta{Days: int32(v.Days), Seconds: int32(v.Seconds), Microseconds: int32(v.Microseconds)}}
	case object.TimeZone:
		n.Kind = &pb.MontyNode_Timezone{Timezone: &pb.TimeZone{OffsetSeconds: int32(v.Offset), Name: v.Name}}
	}
}

func int32Ptr(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := int32(*p)
	return &v
}

func intPtr(p *int32) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

// arenaReader turns an arena back into values. Every node is checked once,
// in order: its children must come before it, its depth stays within
// object.MaxDepth, and the values it expands to stay within MaxValueNodes.
type arenaReader struct {
	nodes []*pb.MontyNode
	depth []uint16
	size  []uint64 // nodes the value expands to, saturating
	built []object.Value
	used  uint64
}

// DecodeValues reads the values at roots from arena (nil for an empty
// arena). Shared nodes become equal copies; output-only nodes (repr, cycle)
// and uuid nodes are refused, as upstream's worker refuses them as inputs.
func DecodeValues(arena *pb.Arena, roots ...uint32) ([]object.Value, error) {
	r := arenaReader{nodes: arena.GetNodes()}
	if err := r.check(); err != nil {
		return nil, err
	}
	out := make([]object.Value, len(roots))
	for i, idx := range roots {
		v, err := r.value(idx)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// children lists the indexes a node points at.
func children(n *pb.MontyNode) []uint32 {
	switch k := n.Kind.(type) {
	case *pb.MontyNode_List:
		return k.List.GetItems()
	case *pb.MontyNode_Tuple:
		return k.Tuple.GetItems()
	case *pb.MontyNode_Set:
		return k.Set.GetItems()
	case *pb.MontyNode_FrozenSet:
		return k.FrozenSet.GetItems()
	case *pb.MontyNode_NamedTuple:
		return k.NamedTuple.GetValues()
	case *pb.MontyNode_Dict:
		return pairIndexes(k.Dict)
	case *pb.MontyNode_Type:
		return pairIndexes(k.Type.GetAttrs())
	case *pb.MontyNode_Module:
		return pairIndexes(k.Module.GetAttrs())
	case *pb.MontyNode_ClassInstance:
		return append([]uint32{k.ClassInstance.GetClassType()}, pairIndexes(k.ClassInstance.GetAttrs())...)
	}
	return nil
}

func pairIndexes(ps *pb.NodePairs) []uint32 {
	out := make([]uint32, 0, 2*len(ps.GetPairs()))
	for _, p := range ps.GetPairs() {
		out = append(out, p.GetKey(), p.GetValue())
	}
	return out
}

func (r *arenaReader) check() error {
	r.depth = make([]uint16, len(r.nodes))
	r.size = make([]uint64, len(r.nodes))
	r.built = make([]object.Value, len(r.nodes))
	for i, n := range r.nodes {
		if n == nil || n.Kind == nil {
			return badValue("node %d has no kind", i)
		}
		depth, size := uint16(0), uint64(1)
		for _, c := range children(n) {
			if int(c) >= i {
				return badValue("node %d refers to node %d, which does not come before it", i, c)
			}
			depth = max(depth, r.depth[c]+1)
			size += r.size[c]
			if size > MaxValueNodes {
				size = MaxValueNodes + 1
			}
		}
		if depth > object.MaxDepth {
			return badValue("node %d is nested more than %d levels deep", i, object.MaxDepth)
		}
		r.depth[i], r.size[i] = depth, size
	}
	return nil
}

func (r *arenaReader) value(idx uint32) (object.Value, error) {
	if int(idx) >= len(r.nodes) {
		return nil, badValue("index %d is outside an arena of %d nodes", idx, len(r.nodes))
	}
	r.used += r.size[idx]
	if r.used > MaxValueNodes {
		return nil, badValue("the values expand to more than %d nodes", MaxValueNodes)
	}
	return r.build(idx)
}

// build makes the value of node idx; check has validated the indexes.
// Containers' values are built once and shared (object values are not
// mutated after decoding).
func (r *arenaReader) build(idx uint32) (object.Value, error) {
	if v := r.built[idx]; v != nil {
		return v, nil
	}
	v, err := r.make(r.nodes[idx])
	if err != nil {
		return nil, err
	}
	r.built[idx] = v
	return v, nil
}

func (r *arenaReader) items(idx []uint32) ([]object.Value, error) {
	out := make([]object.Value, len(idx))
	for i, c := range idx {
		v, err := r.build(c)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (r *arenaReader) pairs(ps *pb.NodePairs) ([]object.Pair, error) {
	out := make([]object.Pair, len(ps.GetPairs()))
	for i, p := range ps.GetPairs() {
		k, err := r.build(p.GetKey())
		if err != nil {
			return nil, err
		}
		v, err := r.build(p.GetValue())
		if err != nil {
			return nil, err
		}
		out[i] = object.Pair{Key: k, Value: v}
	}
	return out, nil
}

func uuidOf(u *pb.Uuid, what string) (object.UUID, error) {
	var id object.UUID
	if len(u.GetData()) != len(id) {
		return id, badValue("%s is not a 16-byte uuid", what)
	}
	copy(id[:], u.GetData())
	return id, nil
}

func (r *arenaReader) class(t *pb.Type) (object.ClassType, error) {
	if t.GetOrigin() != pb.TypeOrigin_TYPE_ORIGIN_SANDBOX && t.GetOrigin() != pb.TypeOrigin_TYPE_ORIGIN_HOST {
		return object.ClassType{}, badValue("class %q has origin %v", t.GetName(), t.GetOrigin())
	}
	id, err := uuidOf(t.GetId(), "the class id")
	if err != nil {
		return object.ClassType{}, err
	}
	attrs, err := r.pairs(t.GetAttrs())
	if err != nil {
		return object.ClassType{}, err
	}
	return object.ClassType{Name: t.GetName(), ID: id, HostDefined: t.GetOrigin() == pb.TypeOrigin_TYPE_ORIGIN_HOST,
		IsDataclass: t.GetIsDataclass(), Attrs: attrs}, nil
}

func (r *arenaReader) make(n *pb.MontyNode) (object.Value, error) {
	switch k := n.Kind.(type) {
	case *pb.MontyNode_None:
		return object.None{}, nil
	case *pb.MontyNode_Ellipsis:
		return object.Ellipsis{}, nil
	case *pb.MontyNode_NotImplemented:
		return object.NotImplemented{}, nil
	case *pb.MontyNode_Boolean:
		return object.Bool(k.Boolean), nil
	case *pb.MontyNode_Int:
		return object.Int(k.Int), nil
	case *pb.MontyNode_Bigint:
		m := new(big.Int).SetBytes(k.Bigint.GetMagnitude())
		if k.Bigint.GetNegative() {
			m.Neg(m)
		}
		return object.IntFromBig(m), nil
	case *pb.MontyNode_Float:
		return object.Float(k.Float), nil
	case *pb.MontyNode_Str:
		return object.Str(k.Str), nil
	case *pb.MontyNode_Bytes:
		return object.Bytes(k.Bytes), nil
	case *pb.MontyNode_List:
		items, err := r.items(k.List.GetItems())
		return object.List(items), err
	case *pb.MontyNode_Tuple:
		items, err := r.items(k.Tuple.GetItems())
		return object.Tuple(items), err
	case *pb.MontyNode_Set:
		items, err := r.items(k.Set.GetItems())
		return object.Set(items), err
	case *pb.MontyNode_FrozenSet:
		items, err := r.items(k.FrozenSet.GetItems())
		return object.FrozenSet(items), err
	case *pb.MontyNode_Dict:
		pairs, err := r.pairs(k.Dict)
		return object.Dict(pairs), err
	case *pb.MontyNode_NamedTuple:
		nt := k.NamedTuple
		if len(nt.GetFieldNames()) != len(nt.GetValues()) {
			return nil, badValue("named tuple %q has %d field names and %d values", nt.GetTypeName(), len(nt.GetFieldNames()), len(nt.GetValues()))
		}
		items, err := r.items(nt.GetValues())
		return object.NamedTuple{TypeName: nt.GetTypeName(), Fields: nt.GetFieldNames(), Values: items}, err
	case *pb.MontyNode_Date, *pb.MontyNode_Datetime, *pb.MontyNode_Time, *pb.MontyNode_Timedelta, *pb.MontyNode_Timezone:
		return makeTime(n)
	case *pb.MontyNode_Exception:
		e := object.Exception{Type: k.Exception.GetExcType()}
		if k.Exception.Arg != nil {
			e.Message, e.HasMessage = *k.Exception.Arg, true
		}
		return e, nil
	case *pb.MontyNode_Type, *pb.MontyNode_ClassInstance, *pb.MontyNode_Module:
		return r.makeObject(n)
	case *pb.MontyNode_Function:
		return object.Function{Name: k.Function.GetName(), Doc: k.Function.Docstring}, nil
	case *pb.MontyNode_BuiltinFunction:
		return object.BuiltinFunction(k.BuiltinFunction), nil
	case *pb.MontyNode_Path:
		return object.Path(k.Path), nil
	case *pb.MontyNode_FileHandle:
		f := k.FileHandle
		return object.File{Path: f.GetPath(), Mode: f.GetMode(), Position: f.GetPosition()}, nil
	case *pb.MontyNode_Complex:
		c := k.Complex
		if c.Real == nil || c.Imag == nil {
			return nil, badValue("a complex lacks its real or imaginary part")
		}
		return object.Complex{Real: *c.Real, Imag: *c.Imag}, nil
	case *pb.MontyNode_Decimal:
		return object.Decimal(k.Decimal), nil
	case *pb.MontyNode_Repr:
		return nil, fmt.Errorf("invalid input type: 'Repr' %w", ErrOutputOnly)
	case *pb.MontyNode_Cycle:
		return nil, fmt.Errorf("invalid input type: 'Cycle' %w", ErrOutputOnly)
	case *pb.MontyNode_Uuid:
		return nil, badValue("uuid values are not supported")
	}
	return nil, badValue("unknown node kind")
}

// makeObject makes a type, an instance or a module.
func (r *arenaReader) makeObject(n *pb.MontyNode) (object.Value, error) {
	switch k := n.Kind.(type) {
	case *pb.MontyNode_Type:
		if k.Type.GetOrigin() == pb.TypeOrigin_TYPE_ORIGIN_BUILTIN {
			if k.Type.GetId() != nil {
				return nil, badValue("builtin type %q has an id", k.Type.GetName())
			}
			return object.TypeObject(k.Type.GetName()), nil
		}
		return r.class(k.Type)
	case *pb.MontyNode_ClassInstance:
		ci := k.ClassInstance
		t, ok := r.nodes[ci.GetClassType()].Kind.(*pb.MontyNode_Type)
		if !ok {
			return nil, badValue("an instance's class is not a type node")
		}
		class, err := r.class(t.Type)
		if err != nil {
			return nil, err
		}
		id, err := uuidOf(ci.GetInstanceId(), "the instance id")
		if err != nil {
			return nil, err
		}
		attrs, err := r.pairs(ci.GetAttrs())
		return object.Instance{Class: class, ID: id, Attrs: attrs}, err
	case *pb.MontyNode_Module:
		id, err := uuidOf(k.Module.GetId(), "the module id")
		if err != nil {
			return nil, err
		}
		attrs, err := r.pairs(k.Module.GetAttrs())
		return object.Module{Name: k.Module.GetName(), ID: id, Attrs: attrs}, err
	}
	return nil, badValue("unknown node kind")
}

// makeTime makes a date, datetime, time, timedelta or timezone.
func makeTime(n *pb.MontyNode) (object.Value, error) {
	switch k := n.Kind.(type) {
	case *pb.MontyNode_Date:
		d := k.Date
		return object.Date{Year: int(d.GetYear()), Month: int(d.GetMonth()), Day: int(d.GetDay())}, nil
	case *pb.MontyNode_Datetime:
		d := k.Datetime
		if d.TimezoneName != nil && d.OffsetSeconds == nil {
			return nil, badValue("a datetime has a zone name but no offset")
		}
		return object.DateTime{Year: int(d.GetYear()), Month: int(d.GetMonth()), Day: int(d.GetDay()),
			Hour: int(d.GetHour()), Minute: int(d.GetMinute()), Second: int(d.GetSecond()), Microsecond: int(d.GetMicrosecond()),
			Offset: intPtr(d.OffsetSeconds), TZName: d.TimezoneName}, nil
	case *pb.MontyNode_Time:
		t := k.Time
		if t.TimezoneName != nil && t.OffsetSeconds == nil {
			return nil, badValue("a time has a zone name but no offset")
		}
		return object.Time{Hour: int(t.GetHour()), Minute: int(t.GetMinute()), Second: int(t.GetSecond()), Microsecond: int(t.GetMicrosecond()),
			Offset: intPtr(t.OffsetSeconds), TZName: t.TimezoneName, Fold: int(t.GetFold())}, nil
	case *pb.MontyNode_Timedelta:
		d := k.Timedelta
		return object.NewTimeDelta(int64(d.GetDays()), int64(d.GetSeconds()), int64(d.GetMicroseconds())), nil
	case *pb.MontyNode_Timezone:
		return object.TimeZone{Offset: int(k.Timezone.GetOffsetSeconds()), Name: k.Timezone.Name}, nil
	}
	return nil, badValue("unknown node kind")
}
