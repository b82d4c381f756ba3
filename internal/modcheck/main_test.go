package main

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The root's zip holds the root module's files only: none of a nested
// module's, which the go command would refuse as belonging to another module.
func TestPublishRootLeavesOutNestedModules(t *testing.T) {
	proxy := t.TempDir()
	path, err := publish(proxy, filepath.Join("..", ".."), "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	for _, name := range []string{"list", "v0.1.0.info", "v0.1.0.mod", "v0.1.0.zip"} {
		if _, err := os.Stat(filepath.Join(at, name)); err != nil {
			t.Errorf("proxy lacks %s: %v", name, err)
		}
	}
	z, err := zip.OpenReader(filepath.Join(at, "v0.1.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	prefix := path + "@v0.1.0/"
	seen := map[string]bool{}
	for _, f := range z.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			t.Fatalf("%s is not under %s", f.Name, prefix)
		}
		seen[name] = true
		for _, nested := range []string{"leaseqprom/", "leaseqotel/", "bench/", "internal/modcheck/", "dashboard/browsertest/"} {
			if strings.HasPrefix(name, nested) {
				t.Errorf("root zip holds %s, of the nested module %s", name, nested)
			}
		}
	}
	for _, want := range []string{"go.mod", "queue.go", "dashboard/dashboard.go"} {
		if !seen[want] {
			t.Errorf("root zip lacks %s", want)
		}
	}
}
