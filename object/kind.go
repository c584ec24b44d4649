package object

// Kind identifies the concrete type of a [Value]: there is one Kind per
// concrete type of this package.
type Kind uint8

// The kinds, one per concrete [Value] type.
const (
	KindInvalid         Kind = iota // the zero Kind; reported for a nil Value
	KindNone                        // None
	KindBool                        // Bool
	KindInt                         // Int
	KindBigInt                      // BigInt
	KindFloat                       // Float
	KindComplex                     // Complex
	KindStr                         // Str
	KindBytes                       // Bytes
	KindList                        // List
	KindTuple                       // Tuple
	KindDict                        // Dict
	KindSet                         // Set
	KindFrozenSet                   // FrozenSet
	KindNamedTuple                  // NamedTuple
	KindClassType                   // ClassType
	KindInstance                    // Instance
	KindException                   // Exception
	KindPath                        // Path
	KindDate                        // Date
	KindDateTime                    // DateTime
	KindTime                        // Time
	KindTimeDelta                   // TimeDelta
	KindTimeZone                    // TimeZone
	KindFunction                    // Function
	KindOpaque                      // Opaque
	KindCycle                       // Cycle
	KindEllipsis                    // Ellipsis
	KindNotImplemented              // NotImplemented
	KindDecimal                     // Decimal
	KindTypeObject                  // TypeObject
	KindBuiltinFunction             // BuiltinFunction
	KindModule                      // Module
	KindFile                        // File
)

var kindNames = [...]string{
	KindInvalid:         "invalid",
	KindNone:            "NoneType",
	KindBool:            "bool",
	KindInt:             "int",
	KindBigInt:          "int",
	KindFloat:           "float",
	KindComplex:         "complex",
	KindStr:             "str",
	KindBytes:           "bytes",
	KindList:            "list",
	KindTuple:           "tuple",
	KindDict:            "dict",
	KindSet:             "set",
	KindFrozenSet:       "frozenset",
	KindNamedTuple:      "namedtuple",
	KindClassType:       "type",
	KindInstance:        "object",
	KindException:       "exception",
	KindPath:            "PosixPath",
	KindDate:            "date",
	KindDateTime:        "datetime",
	KindTime:            "time",
	KindTimeDelta:       "timedelta",
	KindTimeZone:        "timezone",
	KindFunction:        "function",
	KindOpaque:          "repr",
	KindCycle:           "cycle",
	KindEllipsis:        "ellipsis",
	KindNotImplemented:  "NotImplementedType",
	KindDecimal:         "Decimal",
	KindTypeObject:      "type",
	KindBuiltinFunction: "builtin_function_or_method",
	KindModule:          "module",
	KindFile:            "file",
}

// String returns the Python name of the kind as error messages use it, such
// as "str", "dict" or "NoneType". Int and BigInt are both "int"; kinds with no
// single Python type have a descriptive name ("namedtuple", "object" for a
// class instance, "exception", "repr", "cycle", "file").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}
