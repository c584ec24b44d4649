package object

// Decoders of the fixed-shape tagged values of docs/values.md; each is called
// after its tag has been read.

func (d *decoder) namedTuple(depth int) (Value, error) {
	var t NamedTuple
	indef, err := d.fixed(3)
	if err != nil {
		return nil, err
	}
	if t.TypeName, err = d.text(); err != nil {
		return nil, err
	}
	n, fieldsIndef, err := d.array()
	if err != nil {
		return nil, err
	}
	t.Fields = make([]string, 0, n)
	for fieldsIndef && !d.atBreak() || !fieldsIndef && len(t.Fields) < n {
		f, err := d.text()
		if err != nil {
			return nil, err
		}
		t.Fields = append(t.Fields, f)
	}
	start := d.pos
	if t.Values, err = d.items(depth); err != nil {
		return nil, err
	}
	if len(t.Values) != len(t.Fields) {
		return nil, d.failAt(start, "named tuple needs one value per field")
	}
	return t, d.end(indef)
}

func (d *decoder) class(depth int) (ClassType, error) {
	var c ClassType
	if depth > MaxDepth {
		return c, d.failAt(d.pos, "nested deeper than 1000 levels")
	}
	indef, err := d.fixed(5)
	if err != nil {
		return c, err
	}
	if c.Name, err = d.text(); err != nil {
		return c, err
	}
	if c.ID, err = d.uuid(); err != nil {
		return c, err
	}
	if c.HostDefined, err = d.bool(); err != nil {
		return c, err
	}
	if c.IsDataclass, err = d.bool(); err != nil {
		return c, err
	}
	if c.Attrs, err = d.pairs(depth); err != nil {
		return c, err
	}
	return c, d.end(indef)
}

func (d *decoder) instance(depth int) (Value, error) {
	var in Instance
	indef, err := d.fixed(3)
	if err != nil {
		return nil, err
	}
	start := d.pos
	if m, tag, tagIndef, err := d.head(); err != nil {
		return nil, err
	} else if m != majorTag || tag != tagClass || tagIndef {
		return nil, d.failAt(start, "instance must start with its class (tag 40006)")
	}
	if in.Class, err = d.class(depth + 1); err != nil {
		return nil, err
	}
	if in.ID, err = d.uuid(); err != nil {
		return nil, err
	}
	if in.Attrs, err = d.pairs(depth); err != nil {
		return nil, err
	}
	return in, d.end(indef)
}

func (d *decoder) exception() (Value, error) {
	var e Exception
	indef, err := d.fixed(2)
	if err != nil {
		return nil, err
	}
	if e.Type, err = d.text(); err != nil {
		return nil, err
	}
	if !d.null() {
		if e.Message, err = d.text(); err != nil {
			return nil, err
		}
		e.HasMessage = true
	}
	return e, d.end(indef)
}

// ints reads len(dst) integer fields into dst.
func (d *decoder) ints(dst ...*int) error {
	for _, p := range dst {
		n, err := d.int()
		if err != nil {
			return err
		}
		*p = n
	}
	return nil
}

func (d *decoder) date() (Value, error) {
	var x Date
	indef, err := d.fixed(3)
	if err != nil {
		return nil, err
	}
	if err := d.ints(&x.Year, &x.Month, &x.Day); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) dateTime() (Value, error) {
	var x DateTime
	indef, err := d.fixed(9)
	if err != nil {
		return nil, err
	}
	if err := d.ints(&x.Year, &x.Month, &x.Day, &x.Hour, &x.Minute, &x.Second, &x.Microsecond); err != nil {
		return nil, err
	}
	if x.Offset, err = d.optInt(); err != nil {
		return nil, err
	}
	if x.TZName, err = d.optText(); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) time() (Value, error) {
	var x Time
	indef, err := d.fixed(7)
	if err != nil {
		return nil, err
	}
	if err := d.ints(&x.Hour, &x.Minute, &x.Second, &x.Microsecond); err != nil {
		return nil, err
	}
	if x.Offset, err = d.optInt(); err != nil {
		return nil, err
	}
	if x.TZName, err = d.optText(); err != nil {
		return nil, err
	}
	if x.Fold, err = d.int(); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) timeDelta() (Value, error) {
	var x TimeDelta
	indef, err := d.fixed(3)
	if err != nil {
		return nil, err
	}
	if err := d.ints(&x.Days, &x.Seconds, &x.Microseconds); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) timeZone() (Value, error) {
	var x TimeZone
	indef, err := d.fixed(2)
	if err != nil {
		return nil, err
	}
	if x.Offset, err = d.int(); err != nil {
		return nil, err
	}
	if x.Name, err = d.optText(); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) function() (Value, error) {
	var x Function
	indef, err := d.fixed(2)
	if err != nil {
		return nil, err
	}
	if x.Name, err = d.text(); err != nil {
		return nil, err
	}
	if x.Doc, err = d.optText(); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) complex() (Value, error) {
	var x Complex
	indef, err := d.fixed(2)
	if err != nil {
		return nil, err
	}
	if x.Real, err = d.float(); err != nil {
		return nil, err
	}
	if x.Imag, err = d.float(); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) module(depth int) (Value, error) {
	var x Module
	indef, err := d.fixed(3)
	if err != nil {
		return nil, err
	}
	if x.Name, err = d.text(); err != nil {
		return nil, err
	}
	if x.ID, err = d.uuid(); err != nil {
		return nil, err
	}
	if x.Attrs, err = d.pairs(depth); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}

func (d *decoder) file() (Value, error) {
	var x File
	indef, err := d.fixed(3)
	if err != nil {
		return nil, err
	}
	if x.Path, err = d.text(); err != nil {
		return nil, err
	}
	if x.Mode, err = d.text(); err != nil {
		return nil, err
	}
	if x.Position, err = d.uint(); err != nil {
		return nil, err
	}
	return x, d.end(indef)
}
