package conn

import (
	"fmt"
	"strings"
	"testing"
)

func TestOptionsNeverPrintThePassword(t *testing.T) {
	o := Options{Username: "app", Password: "s3cret-token"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{o, &o} {
			out := fmt.Sprintf(format, v)
			if strings.Contains(out, "s3cret-token") {
				t.Errorf("%s of %T shows the password: %s", format, v, out)
			}
			if !strings.Contains(out, "app") {
				t.Errorf("%s of %T hides the user name too: %s", format, v, out)
			}
		}
	}
}
