//go:build !linux && !darwin

package tier1

import "errors"

// freeBytes cannot read the free space here: min_free_bytes is not
// enforced (UseDisk logs it).
func freeBytes(string) (uint64, error) {
	return 0, errors.New("reading the free space is not supported on this system")
}
