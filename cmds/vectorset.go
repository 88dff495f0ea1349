package cmds

import (
	"fmt"
	"strconv"

	"github.com/respire/respire/resp"
)

// VectorRaw is the reply of VEMB ... RAW: the vector as the vector set stores it.
type VectorRaw struct {
	Quantization string  // "int8", "bin" or "f32"
	Data         string  // the stored bytes
	Norm         float64 // the L2 norm the stored vector was divided by
	Range        float64 // the quantization range of int8 vectors, else 0
}

// VectorSetInfo is the reply of VINFO: the fields every Redis 8 sends, typed, and all
// of them as text in Fields (the module adds fields over time).
type VectorSetInfo struct {
	QuantType string
	Dim       int64 // vector-dim
	Size      int64
	MaxLevel  int64
	HNSWM     int64 // hnsw-m
	Fields    map[string]string
}

// decodeFloats reads a list of numbers: RESP3 doubles, RESP2 strings (VEMB).
func decodeFloats(v resp.Value, err error) ([]float64, error) {
	return decodeList(v, err, resp.Value.Float)
}

// decodeVectorRaw reads VEMB RAW's [quantization, data, norm] and, for int8 vectors,
// the range after them.
func decodeVectorRaw(v resp.Value, err error) (VectorRaw, error) {
	es, err := elems(v, err)
	if err != nil {
		return VectorRaw{}, err
	}
	if len(es) < 3 || len(es) > 4 {
		return VectorRaw{}, fmt.Errorf("%w: %d elements for a raw vector", ErrUnexpectedReply, len(es))
	}
	var r VectorRaw
	if r.Quantization, err = es[0].Text(); err != nil {
		return VectorRaw{}, fmt.Errorf("quantization: %w", err)
	}
	if r.Data, err = es[1].Text(); err != nil {
		return VectorRaw{}, fmt.Errorf("data: %w", err)
	}
	if r.Norm, err = es[2].Float(); err != nil {
		return VectorRaw{}, fmt.Errorf("norm: %w", err)
	}
	if len(es) == 4 {
		if r.Range, err = es[3].Float(); err != nil {
			return VectorRaw{}, fmt.Errorf("range: %w", err)
		}
	}
	return r, nil
}

// decodeVectorSetInfo reads VINFO's map (RESP3) or flat array (RESP2) of text and
// integers; a missing key is Nil.
func decodeVectorSetInfo(v resp.Value, err error) (VectorSetInfo, error) {
	if err != nil {
		return VectorSetInfo{}, err
	}
	if v.IsNull() {
		return VectorSetInfo{}, Nil
	}
	info := VectorSetInfo{Fields: map[string]string{}}
	err = fields(v, func(name string, f resp.Value) error {
		var text string
		if f.Kind() == resp.KindInteger {
			n, _ := f.Int()
			text = strconv.FormatInt(n, 10)
		} else {
			var err error
			if text, err = f.Text(); err != nil {
				return err
			}
		}
		info.Fields[name] = text
		var err error
		switch name {
		case "quant-type":
			info.QuantType = text
		case "vector-dim":
			info.Dim, err = f.Int()
		case "size":
			info.Size, err = f.Int()
		case "max-level":
			info.MaxLevel, err = f.Int()
		case "hnsw-m":
			info.HNSWM, err = f.Int()
		}
		return err
	})
	if err != nil {
		return VectorSetInfo{}, err
	}
	return info, nil
}

// decodeLevels reads VLINKS: the neighbours of an element at each level of the graph;
// a missing key or element is Nil.
func decodeLevels(v resp.Value, err error) ([][]string, error) {
	return decodeList(v, err, func(e resp.Value) ([]string, error) { return decodeStrings(e, nil) })
}

// decodeZLevels reads VLINKS ... WITHSCORES: at each level, a RESP3 map or a RESP2
// flat array of neighbour and similarity.
func decodeZLevels(v resp.Value, err error) ([][]Z, error) {
	return decodeList(v, err, func(e resp.Value) ([]Z, error) { return decodeZ(e, nil) })
}

// vectorValues returns the arguments of a vector given to VADD or VSIM: a []float64
// or []float32 as VALUES takes it, its dimension then each number; anything else (an
// FP32 blob, an element of ELE) as it is.
func vectorValues(vector any) []any {
	switch v := vector.(type) {
	case []float64:
		out := make([]any, 0, 1+len(v))
		out = append(out, int64(len(v)))
		for _, f := range v {
			out = append(out, f)
		}
		return out
	case []float32:
		out := make([]any, 0, 1+len(v))
		out = append(out, int64(len(v)))
		for _, f := range v {
			out = append(out, float64(f))
		}
		return out
	}
	return []any{vector}
}
