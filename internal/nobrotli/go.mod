module github.com/molecule-man/go-brrr

go 1.24
