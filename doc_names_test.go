package leaseq_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestDocBeginsWithName: go doc shows a declaration's comment from its first
// line, so a comment that begins with anything but the name (a stray line
// about an internal helper) leaks into the package's documentation.
func TestDocBeginsWithName(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range pkgs["leaseq"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/leaseq/leaseq")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, text string) {
		first := strings.Fields(text)
		if len(first) == 0 {
			return // undocumented is another matter
		}
		if w := first[0]; w != name && !(w == "A" || w == "An" || w == "The") {
			t.Errorf("doc of %s begins %q", name, strings.SplitN(text, "\n", 2)[0])
		}
	}
	for _, f := range p.Funcs {
		check(f.Name, f.Doc)
	}
	for _, ty := range p.Types {
		for _, f := range append(ty.Funcs, ty.Methods...) {
			check(f.Name, f.Doc)
		}
	}
}
