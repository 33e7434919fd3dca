package jsontags

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type inner struct {
	A int `json:"a"`
	B string
}

type outer struct {
	In    *inner           `json:"in"`
	List  []inner          `json:"list"`
	When  time.Time        `json:"when"`
	Map   map[string]inner `json:"map"`
	Plain int
	Skip  struct{ X int } `json:"-"`
	low   int
}

func TestMissing(t *testing.T) {
	_ = outer{}.low
	if diff := cmp.Diff([]string{"inner.B", "outer.Plain"}, Missing(outer{})); diff != "" {
		t.Errorf("Missing (-want +got):\n%s", diff)
	}
}
