package testutil

import (
	"os"
	"strconv"
	"strings"
)

// WriteBytes is this process's write_bytes of /proc/self/io: what it made
// the kernel send to the disk, the cost per acknowledged item that the
// store's benchmarks report (-1 where there is no such file).
func WriteBytes() int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
