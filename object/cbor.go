package object

// CBOR major types.
const (
	majorUint   = 0
	majorNint   = 1
	majorBytes  = 2
	majorText   = 3
	majorArray  = 4
	majorMap    = 5
	majorTag    = 6
	majorSimple = 7
)

// CBOR single-byte items.
const (
	cborFalse   = 0xf4
	cborTrue    = 0xf5
	cborNull    = 0xf6
	cborFloat16 = 0xf9
	cborFloat32 = 0xfa
	cborFloat64 = 0xfb
	cborBreak   = 0xff
)

// Tags of docs/values.md.
const (
	tagPosBignum      = 2
	tagNegBignum      = 3
	tagTuple          = 40000
	tagDict           = 40001
	tagSet            = 40002
	tagFrozenSet      = 40003
	tagNamedTuple     = 40004
	tagInstance       = 40005
	tagClass          = 40006
	tagException      = 40007
	tagPath           = 40008
	tagDate           = 40009
	tagDateTime       = 40010
	tagTime           = 40011
	tagTimeDelta      = 40012
	tagTimeZone       = 40013
	tagFunction       = 40014
	tagRepr           = 40015
	tagCycle          = 40016
	tagEllipsis       = 40017
	tagNotImplemented = 40018
	tagComplex        = 40019
	tagDecimal        = 40020
	tagType           = 40021
	tagBuiltin        = 40022
	tagModule         = 40023
	tagFile           = 40024
)
