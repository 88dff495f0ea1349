package cmds

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/respire/respire/resp"
)

// decoders are the reply decoders of structured results, by name; each must return an
// error, never panic, on any reply.
var decoders = map[string]func(resp.Value, error) (any, error){
	"Z":            func(v resp.Value, err error) (any, error) { return decodeZ(v, err) },
	"Scan":         func(v resp.Value, err error) (any, error) { return decodeScan(v, err) },
	"StringMap":    func(v resp.Value, err error) (any, error) { return decodeStringMap(v, err) },
	"NullStrings":  func(v resp.Value, err error) (any, error) { return decodeNullStrings(v, err) },
	"NullFloats":   func(v resp.Value, err error) (any, error) { return decodeNullFloats(v, err) },
	"XMessages":    func(v resp.Value, err error) (any, error) { return decodeXMessages(v, err) },
	"XStreams":     func(v resp.Value, err error) (any, error) { return decodeXStreams(v, err) },
	"GeoPositions": func(v resp.Value, err error) (any, error) { return decodeGeoPositions(v, err) },
	"GeoResults":   func(v resp.Value, err error) (any, error) { return decodeGeoResults(v, err) },
	"ClientList":   func(v resp.Value, err error) (any, error) { return decodeClientList(v, err) },
	"ClientInfo":   func(v resp.Value, err error) (any, error) { return decodeClientInfo(v, err) },
	"FunctionList": func(v resp.Value, err error) (any, error) { return decodeFunctionList(v, err) },
	"ZWithKey":     func(v resp.Value, err error) (any, error) { return decodeZWithKey(v, err) },
	"KeyValues":    func(v resp.Value, err error) (any, error) { return decodeKeyValues(v, err) },
	"KeyZs":        func(v resp.Value, err error) (any, error) { return decodeKeyZs(v, err) },
	"IntMap":       func(v resp.Value, err error) (any, error) { return decodeIntMap(v, err) },
	"XGroups":      func(v resp.Value, err error) (any, error) { return decodeXInfoGroups(v, err) },
	"XConsumers":   func(v resp.Value, err error) (any, error) { return decodeXInfoConsumers(v, err) },
	"XStreamInfo":  func(v resp.Value, err error) (any, error) { return decodeXInfoStream(v, err) },
	"FieldValues":  func(v resp.Value, err error) (any, error) { return decodeFieldValues(v, err) },
	"XPending":     func(v resp.Value, err error) (any, error) { return decodeXPendingSummary(v, err) },
	"XPendingExt":  func(v resp.Value, err error) (any, error) { return decodeXPendingEntries(v, err) },
	"XAutoClaim":   func(v resp.Value, err error) (any, error) { return decodeXAutoClaim(v, err) },
	"XAutoIDs":     func(v resp.Value, err error) (any, error) { return decodeXAutoClaimIDs(v, err) },
	"NullInts":     func(v resp.Value, err error) (any, error) { return decodeNullInts(v, err) },
	"SlowLog":      func(v resp.Value, err error) (any, error) { return decodeSlowLog(v, err) },
	"StringMaps":   func(v resp.Value, err error) (any, error) { return decodeStringMaps(v, err) },
	"Floats":       func(v resp.Value, err error) (any, error) { return decodeFloats(v, err) },
	"RankScore":    func(v resp.Value, err error) (any, error) { return decodeRankScore(v, err) },
	"LCSMatches":   func(v resp.Value, err error) (any, error) { return decodeLCSMatches(v, err) },
	"VectorRaw":    func(v resp.Value, err error) (any, error) { return decodeVectorRaw(v, err) },
	"VectorInfo":   func(v resp.Value, err error) (any, error) { return decodeVectorSetInfo(v, err) },
	"Levels":       func(v resp.Value, err error) (any, error) { return decodeLevels(v, err) },
	"ZLevels":      func(v resp.Value, err error) (any, error) { return decodeZLevels(v, err) },
	"CommandLog":   func(v resp.Value, err error) (any, error) { return decodeCommandLog(v, err) },
}

// replySeeds are the replies of real servers in both protocols (and a few damaged
// ones), on the wire.
var replySeeds = []string{
	"*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n",                                         // ZRANGE WITHSCORES, RESP2
	"*2\r\n*2\r\n$1\r\na\r\n,1.5\r\n*2\r\n$1\r\nb\r\n,2\r\n",                                       // ZRANGE WITHSCORES, RESP3
	"*2\r\n$1\r\na\r\n,1.5\r\n",                                                                    // ZPOPMIN, RESP3
	"*3\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n",                                                    // odd
	"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",                                                // HSCAN
	"*2\r\n$2\r\n-1\r\n*0\r\n",                                                                     // a bad cursor
	"%1\r\n$1\r\na\r\n$1\r\n1\r\n",                                                                 // HGETALL, RESP3
	"*2\r\n$1\r\na\r\n$-1\r\n",                                                                     // MGET
	"*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",                                        // XRANGE
	"*1\r\n*2\r\n$3\r\nx:s\r\n*1\r\n*2\r\n$3\r\n1-2\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",               // XREAD, RESP2
	"%1\r\n$3\r\nx:s\r\n*1\r\n*2\r\n$3\r\n1-2\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",                     // XREAD, RESP3
	"*1\r\n*2\r\n$3\r\n1-1\r\n_\r\n",                                                               // a deleted pending entry
	"*2\r\n*2\r\n$4\r\n13.3\r\n$4\r\n38.1\r\n*-1\r\n",                                              // GEOPOS
	"*1\r\n*4\r\n$7\r\nPalermo\r\n$6\r\n0.0000\r\n:3479099956230698\r\n*2\r\n,13.36\r\n,38.11\r\n", // GEOSEARCH WITH*
	"$40\r\nid=3 addr=127.0.0.1:5 name= db=0 cmd=x\n\r\n",                                          // CLIENT LIST
	"$9\r\nid=x db=y\r\n",                                                                          // damaged client
	"*1\r\n%3\r\n$12\r\nlibrary_name\r\n$1\r\nl\r\n$6\r\nengine\r\n$3\r\nLUA\r\n$9\r\nfunctions\r\n*1\r\n%3\r\n$4\r\nname\r\n$1\r\nf\r\n$11\r\ndescription\r\n_\r\n$5\r\nflags\r\n*0\r\n", // FUNCTION LIST, RESP3
	"-ERR wrong\r\n",
	"_\r\n",
	":1\r\n",
	"*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n",                                                          // BZPOPMIN
	"*2\r\n$1\r\nk\r\n*2\r\n*2\r\n$1\r\nb\r\n,2\r\n*2\r\n$1\r\na\r\n,1\r\n",                            // ZMPOP, RESP3
	"*1\r\n%2\r\n$4\r\nname\r\n$1\r\ng\r\n$3\r\nlag\r\n_\r\n",                                          // XINFO GROUPS
	"%2\r\n$6\r\nlength\r\n:1\r\n$11\r\nfirst-entry\r\n*2\r\n$3\r\n1-1\r\n*0\r\n",                      // XINFO STREAM
	"*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$3\r\nbob\r\n$1\r\n1\r\n",                       // XPENDING
	"*1\r\n*4\r\n$3\r\n1-1\r\n$3\r\nbob\r\n:5\r\n:1\r\n",                                               // XPENDING extended
	"*3\r\n$3\r\n0-0\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*0\r\n",                   // XAUTOCLAIM
	"*1\r\n*6\r\n:1\r\n:1700000000\r\n:10\r\n*1\r\n$3\r\nGET\r\n$5\r\n1.2:3\r\n$0\r\n\r\n",             // SLOWLOG GET
	"*2\r\n:1\r\n$3\r\n1.5\r\n",                                                                        // ZRANK WITHSCORE, RESP2
	"*2\r\n:1\r\n,1.5\r\n",                                                                             // ZRANK WITHSCORE, RESP3
	"%2\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n", // LCS IDX WITHMATCHLEN, RESP3
	"*4\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n$3\r\nlen\r\n:6\r\n",       // LCS IDX, RESP2
	"*2\r\n$1\r\n1\r\n$1\r\n0\r\n",                                                                     // VEMB, RESP2
	"*4\r\n+int8\r\n$2\r\n\x7f\x00\r\n,1\r\n,1\r\n",                                                    // VEMB RAW, RESP3
	"%2\r\n$10\r\nquant-type\r\n+int8\r\n$6\r\nhnsw-m\r\n:16\r\n",                                      // VINFO, RESP3
	"*2\r\n*1\r\n$2\r\ne2\r\n*0\r\n",                                                                   // VLINKS
	"*1\r\n%1\r\n$2\r\ne2\r\n,0.5\r\n",                                                                 // VLINKS WITHSCORES, RESP3
	"%2\r\n$2\r\ne1\r\n,1\r\n$2\r\ne2\r\n,0.5\r\n",                                                     // VSIM WITHSCORES, RESP3
}

// readReply decodes one reply from wire bytes.
func readReply(wire string) (resp.Value, error) {
	return resp.NewReader(bufio.NewReader(strings.NewReader(wire)), resp.Limits{}).Read()
}

// FuzzDecoders feeds every structured decoder random and damaged replies: each must
// return a value or an error, never panic, and an error that is not the caller's own
// for a reply that is not an error reply.
func FuzzDecoders(f *testing.F) {
	for _, s := range replySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		v, err := readReply(string(wire))
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		for name, decode := range decoders {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s panics on %q: %v", name, wire, r)
					}
				}()
				decode(v, nil)
			}()
		}
	})
}

// TestDecodersRejectDamage checks that the structured decoders say a damaged reply is
// unexpected rather than guess at it.
func TestDecodersRejectDamage(t *testing.T) {
	for _, tc := range []struct {
		decoder, wire string
	}{
		{"Z", "*3\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n"},
		{"Z", "*1\r\n*3\r\n$1\r\na\r\n,1\r\n,2\r\n"},
		{"Scan", "*1\r\n$1\r\n0\r\n"},
		{"Scan", "*2\r\n$2\r\n-1\r\n*0\r\n"},
		{"StringMap", "*1\r\n$1\r\na\r\n"},
		{"XMessages", "*1\r\n$3\r\n1-1\r\n"},
		{"XStreams", "*1\r\n$3\r\nx:s\r\n"},
		{"GeoPositions", "*1\r\n*1\r\n,1\r\n"},
		{"ClientList", "$5\r\nid=x \r\n"},
		{"ClientList", "$7\r\nnoequal\r\n"},
		{"RankScore", "*1\r\n:1\r\n"},
		{"LCSMatches", "*2\r\n$7\r\nmatches\r\n*1\r\n*1\r\n*2\r\n:4\r\n:7\r\n"},
		{"LCSMatches", "*2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*1\r\n:4\r\n*2\r\n:5\r\n:8\r\n"},
		{"VectorRaw", "*2\r\n+int8\r\n$0\r\n\r\n"},
		{"VectorInfo", "*1\r\n$4\r\nsize\r\n"},
		{"ZLevels", "*1\r\n*1\r\n$2\r\ne2\r\n"},
	} {
		v, err := readReply(tc.wire)
		if err != nil {
			t.Fatalf("%q: %v", tc.wire, err)
		}
		if _, err := decoders[tc.decoder](v, nil); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("%s of %q: err %v, want ErrUnexpectedReply", tc.decoder, tc.wire, err)
		}
	}
}

// TestDecodersNil checks that a null reply is Nil for every decoder of a list.
func TestDecodersNil(t *testing.T) {
	for _, name := range []string{"Z", "Scan", "StringMap", "NullStrings", "XMessages", "XStreams", "GeoResults",
		"Floats", "RankScore", "VectorRaw", "VectorInfo", "Levels", "ZLevels"} {
		if _, err := decoders[name](resp.Null(), nil); !errors.Is(err, Nil) {
			t.Errorf("%s of a null: %v, want Nil", name, err)
		}
	}
}
