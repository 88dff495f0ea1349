package cmds

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/respire/respire/resp"
)

// Z is a member of a sorted set with its score: an argument of ZADD and the reply of
// ZRANGE ... WITHSCORES, ZPOPMIN and the like.
type Z struct {
	Member string
	Score  float64
}

// ScanPage is one page of SCAN, SSCAN, HSCAN or ZSCAN: the cursor to continue from (0
// when the iteration is complete) and the page's elements, field and value (HSCAN) or
// member and score (ZSCAN) in turn.
type ScanPage struct {
	Cursor uint64
	Elems  []string
}

// Null is an element of a list that may be null (MGET of a missing key): Valid is
// false for a null, as in database/sql's Null.
type Null[T any] struct {
	V     T
	Valid bool
}

// FieldValue is a field of a hash with its value, an argument of HSET.
type FieldValue struct {
	Field string
	Value any
}

// KeyValue is a key with its value, an argument of MSET.
type KeyValue struct {
	Key   string
	Value any
}

// SlotRange is a range of Cluster hash slots, first and last included: an argument of
// CLUSTER ADDSLOTSRANGE, CLUSTER DELSLOTSRANGE, SFLUSH and TRIMSLOTS.
type SlotRange struct {
	Start, End int64
}

// GeoLocation is a member with its coordinates, an argument of GEOADD.
type GeoLocation struct {
	Longitude, Latitude float64
	Member              any
}

// unexpected is the error of a reply of the wrong shape.
func unexpected(what string, v resp.Value) error {
	return fmt.Errorf("%w: want %s, got %s", ErrUnexpectedReply, what, v.Kind())
}

func decodeValue(v resp.Value, err error) (resp.Value, error) { return v, err }

func decodeString(v resp.Value, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return v.Text()
}

func decodeInt(v resp.Value, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return v.Int()
}

func decodeFloat(v resp.Value, err error) (float64, error) {
	if err != nil {
		return 0, err
	}
	return v.Float()
}

func decodeBool(v resp.Value, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	return v.Bool()
}

// elems returns the elements of an array reply; a null reply is Nil.
func elems(v resp.Value, err error) ([]resp.Value, error) {
	if err != nil {
		return nil, err
	}
	switch v.Kind() {
	case resp.KindArray, resp.KindSet, resp.KindPush:
		return v.Array()
	case resp.KindNull:
		return nil, Nil
	}
	return nil, unexpected("array", v)
}

// decodeList decodes each element of an array reply with one.
func decodeList[T any](v resp.Value, err error, one func(resp.Value) (T, error)) ([]T, error) {
	es, err := elems(v, err)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(es))
	for i, e := range es {
		if out[i], err = one(e); err != nil {
			if errors.Is(err, Nil) {
				// A null element where the list has no room for one is a reply of
				// another shape, not a missing reply: matching Nil would tell the
				// caller the key is missing.
				err = unexpected("a value", e)
			}
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return out, nil
}

func decodeStrings(v resp.Value, err error) ([]string, error) {
	return decodeList(v, err, resp.Value.Text)
}

func decodeInts(v resp.Value, err error) ([]int64, error) {
	return decodeList(v, err, resp.Value.Int)
}

func decodeBools(v resp.Value, err error) ([]bool, error) {
	return decodeList(v, err, resp.Value.Bool)
}

func decodeNullStrings(v resp.Value, err error) ([]Null[string], error) {
	return decodeList(v, err, func(e resp.Value) (Null[string], error) {
		if e.IsNull() {
			return Null[string]{}, nil
		}
		s, err := e.Text()
		return Null[string]{s, err == nil}, err
	})
}

func decodeNullFloats(v resp.Value, err error) ([]Null[float64], error) {
	return decodeList(v, err, func(e resp.Value) (Null[float64], error) {
		if e.IsNull() {
			return Null[float64]{}, nil
		}
		f, err := e.Float()
		return Null[float64]{f, err == nil}, err
	})
}

// decodeStringMap reads a RESP3 map, or its RESP2 form, a flat array of key, value
// pairs.
func decodeStringMap(v resp.Value, err error) (map[string]string, error) {
	if err != nil {
		return nil, err
	}
	switch v.Kind() {
	case resp.KindMap, resp.KindArray:
	case resp.KindNull:
		return nil, Nil
	default:
		return nil, unexpected("map", v)
	}
	kv, _ := v.Array()
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("%w: map of %d elements", ErrUnexpectedReply, len(kv))
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, err := kv[i].Text()
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i/2, err)
		}
		if m[k], err = kv[i+1].Text(); err != nil {
			return nil, fmt.Errorf("value of %q: %w", k, err)
		}
	}
	return m, nil
}

// decodeZ reads members with their scores in each form the servers send them: RESP3's
// array of [member, score] pairs, RESP2's flat array member, score, member, score...,
// the single flat pair of ZPOPMIN without a count under RESP3, and RESP3's map of
// member to score (VSIM ... WITHSCORES).
func decodeZ(v resp.Value, err error) ([]Z, error) {
	var es []resp.Value
	if err == nil && v.Kind() == resp.KindMap {
		es, err = v.Array()
	} else {
		es, err = elems(v, err)
	}
	if err != nil {
		return nil, err
	}
	if v.Kind() != resp.KindMap && len(es) > 0 && es[0].Kind() == resp.KindArray {
		out := make([]Z, len(es))
		for i, e := range es {
			pair, _ := e.Array()
			if e.Kind() != resp.KindArray || len(pair) != 2 {
				return nil, fmt.Errorf("%w: element %d is not a member, score pair", ErrUnexpectedReply, i)
			}
			if out[i], err = memberScore(pair[0], pair[1]); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return out, nil
	}
	if len(es)%2 != 0 {
		return nil, fmt.Errorf("%w: %d elements for member, score pairs", ErrUnexpectedReply, len(es))
	}
	out := make([]Z, len(es)/2)
	for i := range out {
		if out[i], err = memberScore(es[2*i], es[2*i+1]); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return out, nil
}

func memberScore(member, score resp.Value) (Z, error) {
	m, err := member.Text()
	if err != nil {
		return Z{}, err
	}
	s, err := score.Float()
	return Z{Member: m, Score: s}, err
}

// decodeScan reads a SCAN-family reply: the next cursor (a decimal string) and the
// page.
func decodeScan(v resp.Value, err error) (ScanPage, error) {
	es, err := elems(v, err)
	if err != nil {
		return ScanPage{}, err
	}
	if len(es) != 2 {
		return ScanPage{}, fmt.Errorf("%w: scan reply of %d elements", ErrUnexpectedReply, len(es))
	}
	text, err := es[0].Text()
	if err != nil {
		return ScanPage{}, fmt.Errorf("cursor: %w", err)
	}
	cursor, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return ScanPage{}, fmt.Errorf("%w: cursor %q", ErrUnexpectedReply, text)
	}
	page, err := decodeStrings(es[1], nil)
	if err != nil {
		return ScanPage{}, fmt.Errorf("page: %w", err)
	}
	return ScanPage{Cursor: cursor, Elems: page}, nil
}

// decodeFieldValues reads fields with their values in each form the servers send
// them (HRANDFIELD ... WITHVALUES): RESP3's array of [field, value] pairs, RESP2's
// flat array. Each Value is a string.
func decodeFieldValues(v resp.Value, err error) ([]FieldValue, error) {
	es, err := elems(v, err)
	if err != nil {
		return nil, err
	}
	var kv []resp.Value
	if len(es) > 0 && es[0].Kind() == resp.KindArray {
		for i, e := range es {
			pair, _ := e.Array()
			if e.Kind() != resp.KindArray || len(pair) != 2 {
				return nil, fmt.Errorf("%w: element %d is not a field, value pair", ErrUnexpectedReply, i)
			}
			kv = append(kv, pair...)
		}
	} else {
		kv = es
	}
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("%w: %d elements for field, value pairs", ErrUnexpectedReply, len(kv))
	}
	out := make([]FieldValue, len(kv)/2)
	for i := range out {
		f, err := kv[2*i].Text()
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", i, err)
		}
		val, err := kv[2*i+1].Text()
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", f, err)
		}
		out[i] = FieldValue{Field: f, Value: val}
	}
	return out, nil
}
