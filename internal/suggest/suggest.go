// Package suggest finds the name a user probably meant: the closest of a
// set of known names within two edits (Levenshtein, an adjacent
// transposition counting as one), case-insensitive — the "did you mean"
// of an unknown task type.
package suggest

import (
	"strconv"
	"strings"
)

// maxEdits is the farthest a suggestion may be.
const maxEdits = 2

// Closest returns the name of names closest to name within two edits,
// the first of equally close ones; "" when none is that close.
func Closest(name string, names []string) string {
	best, bestD := "", maxEdits+1
	for _, n := range names {
		if d := Distance(strings.ToLower(name), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b (bytes), with an
// adjacent transposition counted as one edit; strings longer than 64
// bytes are 64 apart.
func Distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// DidYouMean is "; did you mean "best"?", the suggestion's part of a
// message, or "" when best is "" (no name close enough).
func DidYouMean(best string) string {
	if best == "" {
		return ""
	}
	return "; did you mean " + strconv.Quote(best) + "?"
}
