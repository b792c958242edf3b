// Package main is the command binsize. It prints where the bytes of a Go ELF binary go: the symbols
// that occupy file bytes (text, read-only data, data; not bss), summed by
// the package that owns them, largest first. The binary must not be
// stripped (build without -ldflags -s). make size runs it.
//
//	go run ./internal/cmd/binsize -top 15 dist/synapse-linux-arm64.full
package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

func main() {
	top := flag.Int("top", 15, "print the `N` largest packages")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: binsize [-top N] BINARY")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *top); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

func run(path string, top int) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %w (build it without -ldflags -s)", path, err)
	}
	byPkg := map[string]uint64{}
	var total uint64
	for _, s := range syms {
		if int(s.Section) <= 0 || int(s.Section) >= len(f.Sections) || s.Size == 0 {
			continue
		}
		if f.Sections[s.Section].Type != elf.SHT_PROGBITS {
			continue // bss and friends take no file bytes
		}
		byPkg[pkgOf(s.Name)] += s.Size
		total += s.Size
	}
	type row struct {
		pkg  string
		size uint64
	}
	rows := make([]row, 0, len(byPkg))
	for p, n := range byPkg {
		rows = append(rows, row{p, n})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].size > rows[j].size })
	if top > len(rows) {
		top = len(rows)
	}
	fmt.Printf("  %9s  %5s  %s\n", "KiB", "%", "package (symbols with file bytes: text, rodata, data)")
	for _, r := range rows[:top] {
		fmt.Printf("  %9.1f  %5.1f  %s\n", float64(r.size)/1024, 100*float64(r.size)/float64(total), r.pkg)
	}
	fmt.Printf("  %9.1f  100.0  total of %d packages\n", float64(total)/1024, len(rows))
	return nil
}

// pkgOf returns the import path that owns a symbol: the name up to the
// first dot after its last slash, with type:, go:itab. and similar
// prefixes and pointer/slice marks removed. Runtime tables that belong to
// no package (go:func.*, pclntab pieces, float constants) are grouped by
// their prefix.
func pkgOf(name string) string {
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:", "go:itab.", "go:link.", "go:string.", "go:map.init."} {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			rest := strings.TrimLeft(name[len(p):], "*[]0123456789")
			if rest == "" || strings.HasPrefix(rest, "map[") || strings.HasPrefix(rest, "func(") ||
				strings.HasPrefix(rest, "struct") || strings.HasPrefix(rest, "interface") || strings.HasPrefix(rest, "chan") {
				return "(" + strings.TrimSuffix(p, ".") + " composite)"
			}
			name = rest
			break
		}
	}
	if strings.HasPrefix(name, "go:") || strings.HasPrefix(name, "$") || strings.HasPrefix(name, "runtime.") && strings.Count(name, ".") == 1 && strings.HasSuffix(name, "tab") {
		if i := strings.IndexAny(name, ".*"); i > 0 {
			return "(" + name[:i] + ")"
		}
		return "(" + name + ")"
	}
	if i := strings.IndexAny(name, "[,"); i > 0 {
		name = name[:i] // generic instantiations and itab pairs: the first type's package
	}
	slash := strings.LastIndexByte(name, '/')
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}
