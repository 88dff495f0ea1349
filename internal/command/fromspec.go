package command

import (
	"strings"

	"github.com/respire/respire/internal/command/spec"
	"github.com/respire/respire/resp"
)

// FromSpec returns the entry of a command read at run time from a server's COMMAND
// INFO reply (for a command the table lacks: a module's, a newer server's). Flags the
// table has no constant for are left out, so a newer server's flags never make a
// command unusable; a specification of a kind the evaluator does not know stays
// BeginUnknown or FindUnknown, which KeysKnown reports. A policy tip the table does
// not know is left out too.
func FromSpec(c *spec.Command) *Info {
	info := &Info{Name: c.Name, Arity: c.Arity}
	for _, f := range c.Flags {
		info.Flags |= flagNames[f]
	}
	info.Request = requestPolicyNames[c.Tip("request_policy")]
	info.Response = responsePolicyNames[c.Tip("response_policy")]
	for _, s := range c.KeySpecs {
		ks := KeySpec{}
		for _, f := range s.Flags {
			ks.Flags |= keySpecFlagNames[f]
		}
		switch s.Begin {
		case "index":
			ks.Begin = BeginSearch{Kind: BeginIndex, Pos: s.Pos}
		case "keyword":
			ks.Begin = BeginSearch{Kind: BeginKeyword, Keyword: s.Keyword, StartFrom: s.StartFrom}
		}
		switch s.Find {
		case "range":
			ks.Find = FindKeys{Kind: FindRange, LastKey: s.LastKey, KeyStep: s.KeyStep, Limit: s.Limit}
		case "keynum":
			ks.Find = FindKeys{Kind: FindKeynum, KeyNumIdx: s.KeyNumIdx, FirstKey: s.FirstKey, KeyStep: s.KeyStep}
		}
		info.KeySpecs = append(info.KeySpecs, ks)
	}
	info.deriveKeys()
	if len(c.Subs) > 0 {
		info.Sub = make(map[string]*Info, len(c.Subs))
		for _, sc := range c.Subs {
			sub := FromSpec(sc)
			_, name, _ := strings.Cut(sc.Name, "|")
			info.Sub[name] = sub
		}
	}
	return info
}

// Specs reads a COMMAND or COMMAND INFO reply into its entries, in the reply's order;
// an entry is nil where the server answered null (COMMAND INFO of a name it does not
// know).
func Specs(reply resp.Value) ([]*spec.Command, error) {
	elems, err := reply.Array()
	if err != nil {
		return nil, err
	}
	out := make([]*spec.Command, len(elems))
	for i, e := range elems {
		if e.IsNull() {
			continue
		}
		if out[i], err = spec.Parse(plain(e)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// plain returns v as the plain values package spec reads: string, int64, nil, []any
// (RESP3 maps and sets flattened like RESP2's arrays).
func plain(v resp.Value) any {
	switch v.Kind() {
	case resp.KindNull:
		return nil
	case resp.KindInteger:
		n, _ := v.Int()
		return n
	case resp.KindArray, resp.KindSet, resp.KindMap, resp.KindPush:
		elems, _ := v.Array()
		out := make([]any, len(elems))
		for i, e := range elems {
			out[i] = plain(e)
		}
		return out
	}
	s, err := v.Text()
	if err != nil {
		return v.String()
	}
	return s
}
