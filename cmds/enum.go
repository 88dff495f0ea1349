package cmds

// Side is an end of a list, for the commands that take one (LMOVE, BLMOVE, LMPOP...).
type Side string

// The ends of a list.
const (
	Left  Side = "LEFT"
	Right Side = "RIGHT"
)
