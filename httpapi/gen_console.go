//go:build ignore

// gen_console writes console/NAME.gz for every console file: the console
// is embedded gzipped (see console.go). Run it with go generate after
// changing a file in console/; TestConsoleFiles fails while a .gz is stale.
package main

import (
	"bytes"
	"compress/gzip"
	"log"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	names, err := filepath.Glob("console/*")
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, ".gz") {
			continue
		}
		raw, err := os.ReadFile(name)
		if err != nil {
			log.Fatal(err)
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(raw)
		if err := zw.Close(); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(name+".gz", b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	gz, _ := filepath.Glob("console/*.gz")
	for _, name := range gz {
		if _, err := os.Stat(strings.TrimSuffix(name, ".gz")); err != nil {
			if err := os.Remove(name); err != nil {
				log.Fatal(err)
			}
		}
	}
}
