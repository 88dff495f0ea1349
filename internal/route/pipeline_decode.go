package route

import (
	"bufio"
	"bytes"

	"github.com/respire/respire/resp"
)

// decodeCommands reads back n encoded commands: a Cluster batch retries a redirected
// command from its arguments, which the plan does not keep.
func decodeCommands(buf []byte, n int) ([][]any, error) {
	rd := resp.NewReader(bufio.NewReader(bytes.NewReader(buf)), resp.Limits{})
	cmds := make([][]any, n)
	for i := range cmds {
		v, err := rd.Read()
		if err != nil {
			return nil, err
		}
		elems, err := v.Array()
		if err != nil {
			return nil, err
		}
		cmd := make([]any, len(elems))
		for j, e := range elems {
			if cmd[j], err = e.Text(); err != nil {
				return nil, err
			}
		}
		cmds[i] = cmd
	}
	return cmds, nil
}
