package route

import (
	"bufio"
	"bytes"

	"github.com/respire/respire/resp"
)

// DecodeCommands reads back n encoded commands: a Cluster batch retries a redirected
// command from its arguments, which the plan does not keep, and a Pipeline plans at Exec
// the commands that waited for COMMAND INFO.
func DecodeCommands(buf []byte, n int) ([][]any, error) {
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
