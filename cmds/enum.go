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
