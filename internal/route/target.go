package route

// AnySlot is the slot of a command without keys: any server may run it.
const AnySlot = -1

// Target says which server a command or connection is for. The zero value is not
// useful; start from [Any] or [Slot].
type Target struct {
	// Slot is the hash slot of the command's keys, AnySlot without keys. Only a
	// Cluster router routes by it.
	Slot int
	// Replica says that a replica may serve the command (a read-only command with
	// replica reads on); the router falls back to the master when it has none.
	Replica bool
	// Addr, when set, names the server itself ("host:port"), whichever slots it
	// serves: a connection to the node that carried an earlier command. Routers of
	// one server ignore it.
	Addr string
}

// Any is the target of a command without keys.
func Any() Target { return Target{Slot: AnySlot} }

// Slot is the target of a command whose keys hash to slot.
func Slot(slot int) Target { return Target{Slot: slot} }

// Node is the target of the server at addr.
func Node(addr string) Target { return Target{Slot: AnySlot, Addr: addr} }
