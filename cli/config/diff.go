package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// ChangedFields names the fields whose values differ between two values
// of a config struct, as the config file names them: the JSON keys, with
// the keys of objects joined by dots down to two levels
// ("tier1.max_batch_bytes", "mqtt"), sorted. Fields the file does not
// hold (json:"-") are not compared.
func ChangedFields(old, next any) ([]string, error) {
	a, err := asTree(old)
	if err != nil {
		return nil, err
	}
	b, err := asTree(next)
	if err != nil {
		return nil, err
	}
	var out []string
	diffTree("", a, b, 2, &out)
	sort.Strings(out)
	return out, nil
}

// asTree is v as the generic JSON value it is written as.
func asTree(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("compare configurations: %w", err)
	}
	var t any
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("compare configurations: %w", err)
	}
	return t, nil
}

// diffTree appends to out the paths below prefix where a and b differ,
// descending depth levels of objects at most.
func diffTree(prefix string, a, b any, depth int, out *[]string) {
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB || depth == 0 {
		if !reflect.DeepEqual(a, b) {
			*out = append(*out, prefix)
		}
		return
	}
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	for k := range keys {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		diffTree(name, ma[k], mb[k], depth-1, out)
	}
}
