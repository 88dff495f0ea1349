package emulator

// containerCommands have subcommands, counted and matched also as "NAME SUB".
var containerCommands = map[string]bool{
	"ACL": true, "CLIENT": true, "CLUSTER": true, "COMMAND": true, "CONFIG": true,
	"FUNCTION": true, "LATENCY": true, "MEMORY": true, "MODULE": true, "OBJECT": true,
	"PUBSUB": true, "SCRIPT": true, "SLOWLOG": true, "XGROUP": true, "XINFO": true,
}

// setFormKeywords are the SET options counted and matched as "SET NAME".
var setFormKeywords = map[string]bool{
	"NX": true, "XX": true, "GET": true, "KEEPTTL": true,
	"EX": true, "PX": true, "EXAT": true, "PXAT": true,
	"IFEQ": true, "IFNE": true, "IFDEQ": true, "IFDNE": true,
}

// setArgOptions are the SET options followed by an argument.
var setArgOptions = map[string]bool{
	"EX": true, "PX": true, "EXAT": true, "PXAT": true,
	"IFEQ": true, "IFNE": true, "IFDEQ": true, "IFDNE": true,
}

// commandNames returns the names a command is counted and matched by: its upper-case
// name ("SET"), "NAME SUB" for a container command ("CLIENT KILL"), and "SET OPT" for
// each option of a SET ("SET IFEQ", "SET NX", "SET PX"). The first is the name.
func commandNames(args [][]byte) []string {
	if len(args) == 0 {
		return []string{""}
	}
	name := upper(args[0])
	names := []string{name}
	switch {
	case containerCommands[name] && len(args) > 1:
		names = append(names, name+" "+upper(args[1]))
	case name == "SET":
		seen := map[string]bool{}
		for i := 3; i < len(args); i++ {
			opt := upper(args[i])
			if setFormKeywords[opt] && !seen[opt] {
				seen[opt] = true
				names = append(names, "SET "+opt)
			}
			if setArgOptions[opt] {
				i++
			}
		}
	}
	return names
}
