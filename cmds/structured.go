package cmds

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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

// ZWithKey is a member with its score and the key it was popped from (BZPOPMIN).
type ZWithKey struct {
	Key string
	Z
}

// KeyValues is the key LMPOP popped from and its elements.
type KeyValues struct {
	Key    string
	Values []string
}

// KeyZs is the key ZMPOP popped from and its members with their scores.
type KeyZs struct {
	Key     string
	Members []Z
}

// XGroupInfo is a consumer group of XINFO GROUPS. EntriesRead and Lag are -1 when the
// server does not know them (it sends a null).
type XGroupInfo struct {
	Name            string
	Consumers       int64
	Pending         int64
	LastDeliveredID string
	EntriesRead     int64
	Lag             int64
}

// XConsumerInfo is a consumer of XINFO CONSUMERS.
type XConsumerInfo struct {
	Name     string
	Pending  int64
	Idle     time.Duration
	Inactive time.Duration // -1 when the server does not send it (before 7.2)
}

// XStreamInfo is XINFO STREAM's summary of a stream (without FULL).
type XStreamInfo struct {
	Length               int64
	RadixTreeKeys        int64
	RadixTreeNodes       int64
	Groups               int64
	LastGeneratedID      string
	MaxDeletedEntryID    string
	EntriesAdded         int64
	RecordedFirstEntryID string
	FirstEntry           Null[XMessage]
	LastEntry            Null[XMessage]
}

// decodeZWithKey reads BZPOPMIN's [key, member, score]; a timeout is Nil.
func decodeZWithKey(v resp.Value, err error) (ZWithKey, error) {
	es, err := elems(v, err)
	if err != nil {
		return ZWithKey{}, err
	}
	if len(es) != 3 {
		return ZWithKey{}, fmt.Errorf("%w: %d elements for key, member, score", ErrUnexpectedReply, len(es))
	}
	key, err := es[0].Text()
	if err != nil {
		return ZWithKey{}, fmt.Errorf("key: %w", err)
	}
	z, err := memberScore(es[1], es[2])
	return ZWithKey{key, z}, err
}

// keyAndList reads LMPOP's and ZMPOP's [key, list]; nothing popped is Nil.
func keyAndList(v resp.Value, err error) (string, resp.Value, error) {
	es, err := elems(v, err)
	if err != nil {
		return "", resp.Value{}, err
	}
	if len(es) != 2 {
		return "", resp.Value{}, fmt.Errorf("%w: %d elements for key, list", ErrUnexpectedReply, len(es))
	}
	key, err := es[0].Text()
	if err != nil {
		return "", resp.Value{}, fmt.Errorf("key: %w", err)
	}
	return key, es[1], nil
}

func decodeKeyValues(v resp.Value, err error) (KeyValues, error) {
	key, list, err := keyAndList(v, err)
	if err != nil {
		return KeyValues{}, err
	}
	values, err := decodeStrings(list, nil)
	return KeyValues{key, values}, err
}

func decodeKeyZs(v resp.Value, err error) (KeyZs, error) {
	key, list, err := keyAndList(v, err)
	if err != nil {
		return KeyZs{}, err
	}
	zs, err := decodeZ(list, nil)
	return KeyZs{key, zs}, err
}

// decodeIntMap reads name, count pairs (PUBSUB NUMSUB): a RESP2 flat array or a RESP3
// map.
func decodeIntMap(v resp.Value, err error) (map[string]int64, error) {
	if err != nil {
		return nil, err
	}
	kv, err := pairs(v)
	if err != nil {
		return nil, err
	}
	m := make(map[string]int64, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, err := kv[i].Text()
		if err != nil {
			return nil, fmt.Errorf("name %d: %w", i/2, err)
		}
		if m[k], err = kv[i+1].Int(); err != nil {
			return nil, fmt.Errorf("count of %q: %w", k, err)
		}
	}
	return m, nil
}

// fields calls set with each name and value of a RESP3 map or its RESP2 flat array.
func fields(v resp.Value, set func(name string, value resp.Value) error) error {
	kv, err := pairs(v)
	if err != nil {
		return err
	}
	for i := 0; i < len(kv); i += 2 {
		name, err := kv[i].Text()
		if err != nil {
			return fmt.Errorf("field name: %w", err)
		}
		if err := set(name, kv[i+1]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// intOrUnknown reads an integer that the server sends as a null when it does not know
// it: -1 then.
func intOrUnknown(v resp.Value) (int64, error) {
	if v.IsNull() {
		return -1, nil
	}
	return v.Int()
}

func decodeXInfoGroups(v resp.Value, err error) ([]XGroupInfo, error) {
	return decodeList(v, err, func(e resp.Value) (XGroupInfo, error) {
		var g XGroupInfo
		err := fields(e, func(name string, f resp.Value) (err error) {
			switch name {
			case "name":
				g.Name, err = f.Text()
			case "consumers":
				g.Consumers, err = f.Int()
			case "pending":
				g.Pending, err = f.Int()
			case "last-delivered-id":
				g.LastDeliveredID, err = f.Text()
			case "entries-read":
				g.EntriesRead, err = intOrUnknown(f)
			case "lag":
				g.Lag, err = intOrUnknown(f)
			}
			return err
		})
		return g, err
	})
}

func decodeXInfoConsumers(v resp.Value, err error) ([]XConsumerInfo, error) {
	return decodeList(v, err, func(e resp.Value) (XConsumerInfo, error) {
		c := XConsumerInfo{Inactive: -1}
		err := fields(e, func(name string, f resp.Value) error {
			var ms int64
			var err error
			switch name {
			case "name":
				c.Name, err = f.Text()
			case "pending":
				c.Pending, err = f.Int()
			case "idle":
				ms, err = f.Int()
				c.Idle = time.Duration(ms) * time.Millisecond
			case "inactive":
				ms, err = f.Int()
				c.Inactive = time.Duration(ms) * time.Millisecond
			}
			return err
		})
		return c, err
	})
}

func decodeXInfoStream(v resp.Value, err error) (XStreamInfo, error) {
	if err != nil {
		return XStreamInfo{}, err
	}
	var s XStreamInfo
	entry := func(f resp.Value) (Null[XMessage], error) {
		if f.IsNull() {
			return Null[XMessage]{}, nil
		}
		m, err := decodeXMessage(f)
		return Null[XMessage]{m, err == nil}, err
	}
	err = fields(v, func(name string, f resp.Value) (err error) {
		switch name {
		case "length":
			s.Length, err = f.Int()
		case "radix-tree-keys":
			s.RadixTreeKeys, err = f.Int()
		case "radix-tree-nodes":
			s.RadixTreeNodes, err = f.Int()
		case "groups":
			s.Groups, err = f.Int()
		case "last-generated-id":
			s.LastGeneratedID, err = f.Text()
		case "max-deleted-entry-id":
			s.MaxDeletedEntryID, err = f.Text()
		case "entries-added":
			s.EntriesAdded, err = f.Int()
		case "recorded-first-entry-id":
			s.RecordedFirstEntryID, err = f.Text()
		case "first-entry":
			s.FirstEntry, err = entry(f)
		case "last-entry":
			s.LastEntry, err = entry(f)
		}
		return err
	})
	return s, err
}

// XPendingSummary is XPENDING's summary of a group's pending entries: how many, the
// lowest and highest IDs, and how many each consumer has.
type XPendingSummary struct {
	Count     int64
	Lower     string
	Higher    string
	Consumers map[string]int64
}

// XPendingEntry is a pending entry of XPENDING's extended form.
type XPendingEntry struct {
	ID         string
	Consumer   string
	Idle       time.Duration
	RetryCount int64
}

// textOrEmpty reads a string the server sends as a null when there is none.
func textOrEmpty(v resp.Value) (string, error) {
	if v.IsNull() {
		return "", nil
	}
	return v.Text()
}

func decodeXPendingSummary(v resp.Value, err error) (XPendingSummary, error) {
	es, err := elems(v, err)
	if err != nil {
		return XPendingSummary{}, err
	}
	if len(es) != 4 {
		return XPendingSummary{}, fmt.Errorf("%w: XPENDING summary of %d elements", ErrUnexpectedReply, len(es))
	}
	var s XPendingSummary
	if s.Count, err = es[0].Int(); err != nil {
		return XPendingSummary{}, fmt.Errorf("count: %w", err)
	}
	if s.Lower, err = textOrEmpty(es[1]); err != nil {
		return XPendingSummary{}, fmt.Errorf("lower ID: %w", err)
	}
	if s.Higher, err = textOrEmpty(es[2]); err != nil {
		return XPendingSummary{}, fmt.Errorf("higher ID: %w", err)
	}
	s.Consumers = map[string]int64{}
	if es[3].IsNull() {
		return s, nil
	}
	consumers, err := elems(es[3], nil)
	if err != nil {
		return XPendingSummary{}, fmt.Errorf("consumers: %w", err)
	}
	for i, c := range consumers {
		pair, _ := c.Array()
		if c.Kind() != resp.KindArray || len(pair) != 2 {
			return XPendingSummary{}, fmt.Errorf("%w: consumer %d is not a name, count pair", ErrUnexpectedReply, i)
		}
		name, err := pair[0].Text()
		if err != nil {
			return XPendingSummary{}, fmt.Errorf("consumer %d: %w", i, err)
		}
		if s.Consumers[name], err = pair[1].Int(); err != nil {
			return XPendingSummary{}, fmt.Errorf("consumer %s: %w", name, err)
		}
	}
	return s, nil
}

func decodeXPendingEntries(v resp.Value, err error) ([]XPendingEntry, error) {
	return decodeList(v, err, func(e resp.Value) (XPendingEntry, error) {
		f, _ := e.Array()
		if e.Kind() != resp.KindArray || len(f) != 4 {
			return XPendingEntry{}, unexpected("pending entry of 4 elements", e)
		}
		var p XPendingEntry
		var err error
		if p.ID, err = f[0].Text(); err != nil {
			return XPendingEntry{}, fmt.Errorf("id: %w", err)
		}
		if p.Consumer, err = f[1].Text(); err != nil {
			return XPendingEntry{}, fmt.Errorf("consumer: %w", err)
		}
		ms, err := f[2].Int()
		if err != nil {
			return XPendingEntry{}, fmt.Errorf("idle: %w", err)
		}
		p.Idle = time.Duration(ms) * time.Millisecond
		if p.RetryCount, err = f[3].Int(); err != nil {
			return XPendingEntry{}, fmt.Errorf("delivery count: %w", err)
		}
		return p, nil
	})
}

// XAutoClaimResult is XAUTOCLAIM's reply: the ID to continue from ("0-0" when the
// scan is complete), the entries claimed and the IDs of pending entries that no longer
// exist in the stream (deleted from the pending list; empty before Redis 7.0).
type XAutoClaimResult struct {
	Start    string
	Messages []XMessage
	Deleted  []string
}

// XAutoClaimIDs is XAUTOCLAIM ... JUSTID's reply: the IDs claimed instead of the
// entries.
type XAutoClaimIDs struct {
	Start   string
	IDs     []string
	Deleted []string
}

// SlowLogEntry is an entry of SLOWLOG GET.
type SlowLogEntry struct {
	ID         int64
	Time       time.Time
	Duration   time.Duration
	Args       []string
	ClientAddr string
	ClientName string
}

// CommandLogEntry is an entry of COMMANDLOG GET. Value is what the log measures: the
// run time in microseconds (slow), or the size in bytes of the request
// (large-request) or of the reply (large-reply).
type CommandLogEntry struct {
	ID         int64
	Time       time.Time
	Value      int64
	Args       []string
	ClientAddr string
	ClientName string
}

// autoClaim splits XAUTOCLAIM's reply into its start ID, its claimed list and its
// deleted IDs.
func autoClaim(v resp.Value, err error) (string, resp.Value, []string, error) {
	es, err := elems(v, err)
	if err != nil {
		return "", resp.Value{}, nil, err
	}
	if len(es) != 2 && len(es) != 3 {
		return "", resp.Value{}, nil, fmt.Errorf("%w: XAUTOCLAIM reply of %d elements", ErrUnexpectedReply, len(es))
	}
	start, err := es[0].Text()
	if err != nil {
		return "", resp.Value{}, nil, fmt.Errorf("start: %w", err)
	}
	var deleted []string
	if len(es) == 3 {
		if deleted, err = decodeStrings(es[2], nil); err != nil {
			return "", resp.Value{}, nil, fmt.Errorf("deleted IDs: %w", err)
		}
	}
	return start, es[1], deleted, nil
}

func decodeXAutoClaim(v resp.Value, err error) (XAutoClaimResult, error) {
	start, claimed, deleted, err := autoClaim(v, err)
	if err != nil {
		return XAutoClaimResult{}, err
	}
	msgs, err := decodeXMessages(claimed, nil)
	return XAutoClaimResult{start, msgs, deleted}, err
}

func decodeXAutoClaimIDs(v resp.Value, err error) (XAutoClaimIDs, error) {
	start, claimed, deleted, err := autoClaim(v, err)
	if err != nil {
		return XAutoClaimIDs{}, err
	}
	ids, err := decodeStrings(claimed, nil)
	return XAutoClaimIDs{start, ids, deleted}, err
}

// decodeNullInts reads a list of integers that may hold nulls (BITFIELD's overflowing
// operations).
func decodeNullInts(v resp.Value, err error) ([]Null[int64], error) {
	return decodeList(v, err, func(e resp.Value) (Null[int64], error) {
		if e.IsNull() {
			return Null[int64]{}, nil
		}
		n, err := e.Int()
		return Null[int64]{n, err == nil}, err
	})
}

func decodeSlowLog(v resp.Value, err error) ([]SlowLogEntry, error) {
	es, err := decodeCommandLog(v, err)
	if err != nil {
		return nil, err
	}
	out := make([]SlowLogEntry, len(es))
	for i, e := range es {
		out[i] = SlowLogEntry{ID: e.ID, Time: e.Time, Duration: time.Duration(e.Value) * time.Microsecond,
			Args: e.Args, ClientAddr: e.ClientAddr, ClientName: e.ClientName}
	}
	return out, nil
}

// decodeCommandLog reads the entries of COMMANDLOG GET and SLOWLOG GET, which have one
// shape: [id, time, value, args] and, since Redis 4.0, the client's address and name.
func decodeCommandLog(v resp.Value, err error) ([]CommandLogEntry, error) {
	return decodeList(v, err, func(e resp.Value) (CommandLogEntry, error) {
		f, _ := e.Array()
		if e.Kind() != resp.KindArray || len(f) < 4 {
			return CommandLogEntry{}, unexpected("log entry", e)
		}
		var s CommandLogEntry
		var err error
		if s.ID, err = f[0].Int(); err != nil {
			return CommandLogEntry{}, fmt.Errorf("id: %w", err)
		}
		at, err := f[1].Int()
		if err != nil {
			return CommandLogEntry{}, fmt.Errorf("time: %w", err)
		}
		s.Time = time.Unix(at, 0)
		if s.Value, err = f[2].Int(); err != nil {
			return CommandLogEntry{}, fmt.Errorf("value: %w", err)
		}
		if s.Args, err = decodeStrings(f[3], nil); err != nil {
			return CommandLogEntry{}, fmt.Errorf("arguments: %w", err)
		}
		if len(f) >= 6 {
			if s.ClientAddr, err = f[4].Text(); err != nil {
				return CommandLogEntry{}, fmt.Errorf("client address: %w", err)
			}
			if s.ClientName, err = f[5].Text(); err != nil {
				return CommandLogEntry{}, fmt.Errorf("client name: %w", err)
			}
		}
		return s, nil
	})
}

// decodeStringMaps reads a list of maps of text (SENTINEL MASTERS, SENTINEL
// REPLICAS): RESP3 maps or RESP2 flat arrays.
func decodeStringMaps(v resp.Value, err error) ([]map[string]string, error) {
	return decodeList(v, err, func(e resp.Value) (map[string]string, error) {
		return decodeStringMap(e, nil)
	})
}

// RankScore is a member's rank in a sorted set with its score, the reply of
// ZRANK ... WITHSCORE and ZREVRANK ... WITHSCORE.
type RankScore struct {
	Rank  int64
	Score float64
}

// LCSMatches is the reply of LCS ... IDX: the matched ranges, longest first, and the
// length of the longest common subsequence.
type LCSMatches struct {
	Matches []LCSMatch
	Len     int64
}

// LCSMatch is one range LCS ... IDX matched: its first and last positions in each of
// the two strings, and its length with WITHMATCHLEN (0 without).
type LCSMatch struct {
	A, B     LCSRange
	MatchLen int64
}

// LCSRange is the positions of a match's first and last characters in one string.
type LCSRange struct {
	Start, End int64
}

// decodeRankScore reads [rank, score]; a missing member or key is Nil.
func decodeRankScore(v resp.Value, err error) (RankScore, error) {
	es, err := elems(v, err)
	if err != nil {
		return RankScore{}, err
	}
	if len(es) != 2 {
		return RankScore{}, fmt.Errorf("%w: %d elements for rank, score", ErrUnexpectedReply, len(es))
	}
	rank, err := es[0].Int()
	if err != nil {
		return RankScore{}, fmt.Errorf("rank: %w", err)
	}
	score, err := es[1].Float()
	if err != nil {
		return RankScore{}, fmt.Errorf("score: %w", err)
	}
	return RankScore{rank, score}, nil
}

// decodeLCSMatches reads LCS ... IDX's map (RESP3) or flat array (RESP2) of
// "matches" and "len".
func decodeLCSMatches(v resp.Value, err error) (LCSMatches, error) {
	if err != nil {
		return LCSMatches{}, err
	}
	var m LCSMatches
	err = fields(v, func(name string, f resp.Value) (err error) {
		switch name {
		case "matches":
			m.Matches, err = decodeList(f, nil, decodeLCSMatch)
		case "len":
			m.Len, err = f.Int()
		}
		return err
	})
	return m, err
}

// decodeLCSMatch reads [[startA, endA], [startB, endB]] and, with WITHMATCHLEN, the
// length after them.
func decodeLCSMatch(v resp.Value) (LCSMatch, error) {
	es, _ := v.Array()
	if v.Kind() != resp.KindArray || len(es) < 2 || len(es) > 3 {
		return LCSMatch{}, unexpected("match of two ranges", v)
	}
	var m LCSMatch
	var err error
	if m.A, err = decodeLCSRange(es[0]); err != nil {
		return LCSMatch{}, err
	}
	if m.B, err = decodeLCSRange(es[1]); err != nil {
		return LCSMatch{}, err
	}
	if len(es) == 3 {
		if m.MatchLen, err = es[2].Int(); err != nil {
			return LCSMatch{}, fmt.Errorf("match length: %w", err)
		}
	}
	return m, nil
}

func decodeLCSRange(v resp.Value) (LCSRange, error) {
	ns, err := decodeInts(v, nil)
	if err != nil {
		return LCSRange{}, err
	}
	if len(ns) != 2 {
		return LCSRange{}, fmt.Errorf("%w: range of %d positions", ErrUnexpectedReply, len(ns))
	}
	return LCSRange{ns[0], ns[1]}, nil
}
