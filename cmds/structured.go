package cmds

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/respire/respire/resp"
)

// XMessage is an entry of a stream: its ID and its fields with their values.
type XMessage struct {
	ID     string
	Values map[string]string
}

// XStream is the entries XREAD or XREADGROUP read from one stream.
type XStream struct {
	Stream   string
	Messages []XMessage
}

// StreamID is a stream with the ID to read after, an argument of XREAD and XREADGROUP
// (">" for new messages of a group, "$" for entries added from now on).
type StreamID struct {
	Key string
	ID  string
}

// GeoPosition is a longitude and a latitude, as GEOPOS returns them.
type GeoPosition struct {
	Longitude, Latitude float64
}

// GeoResult is a member GEOSEARCH or GEORADIUS found, with what its WITH* options
// asked for: the distance (WITHDIST), the geohash (WITHHASH), the coordinates
// (WITHCOORD); the others are zero.
type GeoResult struct {
	Member string
	Dist   float64
	Hash   int64
	GeoPosition
}

// ConnectedClient is one client of CLIENT LIST, or the client of CLIENT INFO: the fields
// every server version sends, typed, and all of them by name in Fields (the servers
// add fields over time).
type ConnectedClient struct {
	ID     int64
	Addr   string
	LAddr  string
	Name   string
	User   string
	DB     int64
	Cmd    string
	Flags  string
	Fields map[string]string
}

// FunctionLibrary is a library of FUNCTION LIST.
type FunctionLibrary struct {
	Name      string
	Engine    string
	Functions []Function
	Code      string // with WITHCODE
}

// Function is a function of a FunctionLibrary.
type Function struct {
	Name        string
	Description string
	Flags       []string
}

// pairs returns the keys and values of a RESP3 map or of its RESP2 form, a flat array.
func pairs(v resp.Value) ([]resp.Value, error) {
	switch v.Kind() {
	case resp.KindMap, resp.KindArray:
	default:
		return nil, unexpected("map", v)
	}
	kv, _ := v.Array()
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("%w: map of %d elements", ErrUnexpectedReply, len(kv))
	}
	return kv, nil
}

// decodeXMessage reads one entry: [id, [field, value, ...]]. A deleted entry that
// XREADGROUP still lists in the pending list has a null for its fields.
func decodeXMessage(v resp.Value) (XMessage, error) {
	pair, err := v.Array()
	if err != nil || v.Kind() != resp.KindArray || len(pair) != 2 {
		return XMessage{}, unexpected("stream entry", v)
	}
	id, err := pair[0].Text()
	if err != nil {
		return XMessage{}, fmt.Errorf("entry id: %w", err)
	}
	if pair[1].IsNull() {
		return XMessage{ID: id}, nil
	}
	values, err := decodeStringMap(pair[1], nil)
	if err != nil {
		return XMessage{}, fmt.Errorf("entry %s: %w", id, err)
	}
	return XMessage{ID: id, Values: values}, nil
}

func decodeXMessages(v resp.Value, err error) ([]XMessage, error) {
	return decodeList(v, err, decodeXMessage)
}

// decodeXStreams reads XREAD's reply: a RESP3 map of stream to entries, or RESP2's
// array of [stream, entries] pairs; a null (BLOCK timed out) is Nil.
func decodeXStreams(v resp.Value, err error) ([]XStream, error) {
	if err != nil {
		return nil, err
	}
	if v.IsNull() {
		return nil, Nil
	}
	var kv []resp.Value
	if v.Kind() == resp.KindMap {
		kv, _ = v.Array()
	} else {
		streams, err := elems(v, nil)
		if err != nil {
			return nil, err
		}
		for i, s := range streams {
			pair, _ := s.Array()
			if s.Kind() != resp.KindArray || len(pair) != 2 {
				return nil, fmt.Errorf("%w: stream %d is not a name, entries pair", ErrUnexpectedReply, i)
			}
			kv = append(kv, pair...)
		}
	}
	out := make([]XStream, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		name, err := kv[i].Text()
		if err != nil {
			return nil, fmt.Errorf("stream name: %w", err)
		}
		msgs, err := decodeXMessages(kv[i+1], nil)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		out = append(out, XStream{Stream: name, Messages: msgs})
	}
	return out, nil
}

func decodeGeoPos(v resp.Value) (GeoPosition, error) {
	xy, err := v.Array()
	if err != nil || len(xy) != 2 {
		return GeoPosition{}, unexpected("longitude, latitude pair", v)
	}
	lon, err := xy[0].Float()
	if err != nil {
		return GeoPosition{}, fmt.Errorf("longitude: %w", err)
	}
	lat, err := xy[1].Float()
	if err != nil {
		return GeoPosition{}, fmt.Errorf("latitude: %w", err)
	}
	return GeoPosition{lon, lat}, nil
}

// decodeGeoPositions reads GEOPOS: a position or a null for each member.
func decodeGeoPositions(v resp.Value, err error) ([]Null[GeoPosition], error) {
	return decodeList(v, err, func(e resp.Value) (Null[GeoPosition], error) {
		if e.IsNull() {
			return Null[GeoPosition]{}, nil
		}
		p, err := decodeGeoPos(e)
		return Null[GeoPosition]{p, err == nil}, err
	})
}

// decodeGeoResults reads GEOSEARCH and GEORADIUS: member names, or, with WITH*
// options, [member, dist?, hash?, [lon, lat]?] told apart by their kinds (the
// distance a string or double, the hash an integer, the coordinates an array).
func decodeGeoResults(v resp.Value, err error) ([]GeoResult, error) {
	return decodeList(v, err, func(e resp.Value) (GeoResult, error) {
		if e.Kind() != resp.KindArray {
			m, err := e.Text()
			return GeoResult{Member: m}, err
		}
		parts, _ := e.Array()
		if len(parts) == 0 {
			return GeoResult{}, unexpected("member", e)
		}
		var r GeoResult
		if r.Member, err = parts[0].Text(); err != nil {
			return GeoResult{}, fmt.Errorf("member: %w", err)
		}
		for _, p := range parts[1:] {
			switch p.Kind() {
			case resp.KindInteger:
				r.Hash, _ = p.Int()
			case resp.KindArray:
				if r.GeoPosition, err = decodeGeoPos(p); err != nil {
					return GeoResult{}, err
				}
			default:
				if r.Dist, err = p.Float(); err != nil {
					return GeoResult{}, fmt.Errorf("distance: %w", err)
				}
			}
		}
		return r, nil
	})
}

// parseClientInfo reads one line of CLIENT LIST: name=value fields separated by
// spaces.
func parseClientInfo(line string) (ConnectedClient, error) {
	c := ConnectedClient{Fields: map[string]string{}}
	for _, f := range strings.Fields(line) {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return ConnectedClient{}, fmt.Errorf("%w: client field %q is not name=value", ErrUnexpectedReply, f)
		}
		c.Fields[k] = val
	}
	var err error
	if c.ID, err = strconv.ParseInt(c.Fields["id"], 10, 64); err != nil {
		return ConnectedClient{}, fmt.Errorf("%w: client id %q", ErrUnexpectedReply, c.Fields["id"])
	}
	if db, ok := c.Fields["db"]; ok {
		if c.DB, err = strconv.ParseInt(db, 10, 64); err != nil {
			return ConnectedClient{}, fmt.Errorf("%w: client db %q", ErrUnexpectedReply, db)
		}
	}
	c.Addr, c.LAddr, c.Name, c.User = c.Fields["addr"], c.Fields["laddr"], c.Fields["name"], c.Fields["user"]
	c.Cmd, c.Flags = c.Fields["cmd"], c.Fields["flags"]
	return c, nil
}

// decodeClientList reads CLIENT LIST: one client a line.
func decodeClientList(v resp.Value, err error) ([]ConnectedClient, error) {
	if err != nil {
		return nil, err
	}
	text, err := v.Text()
	if err != nil {
		return nil, err
	}
	var out []ConnectedClient
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		c, err := parseClientInfo(line)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// decodeClientInfo reads CLIENT INFO: one client's line.
func decodeClientInfo(v resp.Value, err error) (ConnectedClient, error) {
	if err != nil {
		return ConnectedClient{}, err
	}
	text, err := v.Text()
	if err != nil {
		return ConnectedClient{}, err
	}
	return parseClientInfo(strings.TrimSpace(text))
}

// decodeFunctionList reads FUNCTION LIST: a map (RESP3) or flat array (RESP2) per
// library, and per function.
func decodeFunctionList(v resp.Value, err error) ([]FunctionLibrary, error) {
	return decodeList(v, err, func(e resp.Value) (FunctionLibrary, error) {
		kv, err := pairs(e)
		if err != nil {
			return FunctionLibrary{}, err
		}
		var lib FunctionLibrary
		for i := 0; i < len(kv); i += 2 {
			k, _ := kv[i].Text()
			switch k {
			case "library_name":
				lib.Name, err = kv[i+1].Text()
			case "engine":
				lib.Engine, err = kv[i+1].Text()
			case "library_code":
				lib.Code, err = kv[i+1].Text()
			case "functions":
				lib.Functions, err = decodeList(kv[i+1], nil, decodeFunction)
			}
			if err != nil {
				return FunctionLibrary{}, fmt.Errorf("%s: %w", k, err)
			}
		}
		return lib, nil
	})
}

func decodeFunction(v resp.Value) (Function, error) {
	kv, err := pairs(v)
	if err != nil {
		return Function{}, err
	}
	var f Function
	for i := 0; i < len(kv); i += 2 {
		k, _ := kv[i].Text()
		switch k {
		case "name":
			f.Name, err = kv[i+1].Text()
		case "description":
			if !kv[i+1].IsNull() {
				f.Description, err = kv[i+1].Text()
			}
		case "flags":
			f.Flags, err = decodeStrings(kv[i+1], nil)
		}
		if err != nil {
			return Function{}, fmt.Errorf("function %s: %w", k, err)
		}
	}
	return f, nil
}
