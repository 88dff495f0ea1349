package cmds

// Side is an end of a list, for the commands that take one (LMOVE, BLMOVE, LMPOP...).
type Side string

// The ends of a list.
const (
	Left  Side = "LEFT"
	Right Side = "RIGHT"
)

// Unit is a unit of distance, for the GEO commands.
type Unit string

// The units of distance.
const (
	Meters     Unit = "m"
	Kilometers Unit = "km"
	Feet       Unit = "ft"
	Miles      Unit = "mi"
)

// VSimFormat is how VSIM and VSIM ... WITHSCORES are given the vector to compare with.
type VSimFormat string

// The ways to give VSIM a vector.
const (
	VSimEle    VSimFormat = "ELE"    // an element of the set, whose vector is used
	VSimFP32   VSimFormat = "FP32"   // a blob of little-endian 32-bit floats
	VSimValues VSimFormat = "VALUES" // a count, then the numbers as text
)
