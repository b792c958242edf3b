package startpages

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strconv"
	"syscall"
)

// release unmaps the pages of the read-only segments of the executable
// (text and read-only data, found in /proc/self/maps as the mappings of
// the file that holds this function's code) with madvise(MADV_DONTNEED),
// and returns the bytes of address space it covered. Writable mappings
// (the data segment, whose pages may differ from the file) are left
// alone, and so is a traced process (a debugger's breakpoints live in
// private copies of text pages).
func release() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	if i := bytes.Index(status, []byte("\nTracerPid:")); i >= 0 {
		f := bytes.Fields(status[i+len("\nTracerPid:"):])
		if len(f) > 0 && string(f[0]) != "0" {
			return 0, errors.New("traced process: pages left mapped")
		}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	type mapping struct {
		lo, hi uint64
		perms  string
		file   string // device and inode
	}
	var ms []mapping
	for _, line := range bytes.Split(maps, []byte("\n")) {
		f := bytes.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := bytes.Cut(f[0], []byte("-"))
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(string(lo), 16, 64)
		h, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 != nil || err2 != nil || string(f[4]) == "0" {
			continue
		}
		ms = append(ms, mapping{l, h, string(f[1]), string(f[3]) + " " + string(f[4])})
	}
	pc := uint64(reflect.ValueOf(release).Pointer())
	exe := ""
	for _, m := range ms {
		if m.lo <= pc && pc < m.hi {
			exe = m.file
		}
	}
	if exe == "" {
		return 0, errors.New("the executable's text is in no mapping of /proc/self/maps")
	}
	var n int64
	for _, m := range ms {
		if m.file != exe || len(m.perms) < 4 || m.perms[1] != '-' || m.perms[3] != 'p' {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(m.lo), uintptr(m.hi-m.lo), syscall.MADV_DONTNEED); e != 0 {
			return n, e
		}
		n += int64(m.hi - m.lo)
	}
	return n, nil
}
