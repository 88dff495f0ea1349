package cmds

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/respire/respire"
)

type user struct {
	Name    string     `redis:"name"`
	Visits  int        `redis:"visits"`
	Score   float64    `redis:"score"`
	Admin   bool       `redis:"admin"`
	Avatar  []byte     `redis:"avatar"`
	Addr    netip.Addr `redis:"addr"`
	Ignored string
	hidden  string `redis:"hidden"`
}

// TestScanMapFromServer reads a hash into a struct through HGETALL and HMGET, in both
// protocols.
func TestScanMapFromServer(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := HSet("scan:u", FieldValue{"name", "Ann"}, FieldValue{"visits", 3}, FieldValue{"score", 1.5},
			FieldValue{"admin", "1"}, FieldValue{"avatar", []byte{1, 2}}, FieldValue{"addr", "10.0.0.1"},
			FieldValue{"hidden", "x"}, FieldValue{"extra", "y"}).Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		m, err := HGetAll("scan:u").Do(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var u user
		if err := ScanMap(m, &u); err != nil {
			t.Fatal(err)
		}
		want := user{Name: "Ann", Visits: 3, Score: 1.5, Admin: true, Avatar: []byte{1, 2}, Addr: netip.MustParseAddr("10.0.0.1")}
		if u.Name != want.Name || u.Visits != want.Visits || u.Score != want.Score || !u.Admin ||
			string(u.Avatar) != string(want.Avatar) || u.Addr != want.Addr || u.hidden != "" {
			t.Errorf("got %+v, want %+v", u, want)
		}

		names := []string{"name", "visits", "missing"}
		values, err := HMGet("scan:u", names...).Do(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		u2 := user{Score: 9}
		if err := ScanFields(names, values, &u2); err != nil || u2.Name != "Ann" || u2.Visits != 3 || u2.Score != 9 {
			t.Errorf("HMGET scan: %+v %v", u2, err)
		}
	})
}

func TestScanMapRejects(t *testing.T) {
	var u user
	for _, tc := range []struct {
		src map[string]string
		dst any
	}{
		{map[string]string{"visits": "many"}, &u},
		{map[string]string{"admin": "perhaps"}, &u},
		{nil, u},
		{nil, (*user)(nil)},
		{nil, new(int)},
		{map[string]string{"x": "1"}, &struct {
			X chan int `redis:"x"`
		}{}},
	} {
		if err := ScanMap(tc.src, tc.dst); !errors.Is(err, ErrInvalidArg) {
			t.Errorf("ScanMap(%v, %T): %v, want ErrInvalidArg", tc.src, tc.dst, err)
		}
	}
	if err := ScanFields([]string{"a"}, nil, &u); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("ScanFields of mismatched lengths: %v", err)
	}
}
