package taskcmd

import (
	"reflect"
	"testing"
)

func TestParseFields(t *testing.T) {
	got, err := parseFields(`{"a":1,"b":"x"}`, []string{"b=2", "c=hello", `d={"k":[1]}`, "e=", `f="7"`})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": float64(1), "b": float64(2), "c": "hello", "d": map[string]any{"k": []any{float64(1)}}, "e": "", "f": "7"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}
