// Command modcheck checks that the nested modules install as an importer
// gets them: from a module proxy, where no replace line of theirs applies.
//
// It lays out a proxy on disk (the layout of `go help goproxy`) holding the
// root module and each named nested module at one version, made from the
// files git tracks in the tree; then, in a fresh module of a temporary
// directory, it runs `go get` of each nested module at that version through
// that proxy and builds a program importing them all.
//
//	go run . [-version v0.1.0] [-keep] ROOT NESTED...
//
// ROOT is the repository's root; each NESTED is a nested module's directory
// relative to it. RELEASING.md says when the version changes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "v0.1.0", "the version the root and the nested modules are published at")
	keep := flag.Bool("keep", false, "keep the temporary directory (the proxy and the fresh module) and print its path")
	flag.Parse()
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: modcheck [-version v] [-keep] ROOT NESTED...")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Args()[1:], *version, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "modcheck:", err)
		os.Exit(1)
	}
}

func run(root string, nested []string, version string, keep bool) error {
	tmp, err := os.MkdirTemp("", "modcheck")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("modcheck: kept", tmp)
	} else {
		defer removeAll(tmp)
	}
	proxy := filepath.Join(tmp, "proxy")
	rootPath, err := publish(proxy, root, version)
	if err != nil {
		return err
	}
	var paths []string
	for _, dir := range nested {
		path, err := publish(proxy, filepath.Join(root, dir), version)
		if err != nil {
			return err
		}
		paths = append(paths, path)
	}
	return install(tmp, proxy, rootPath, paths, version)
}

// publish writes the module in dir at version into the proxy directory:
// list, .info, .mod and .zip. It answers the module's path.
func publish(proxy, dir, version string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(gomod)
	files, err := trackedFiles(dir)
	if err != nil {
		return "", err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return "", err
		}
	}
	z, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		return "", err
	}
	defer z.Close()
	// Create leaves out, as the go command does, the files of modules in
	// subdirectories (the nested modules, from the root's zip).
	if err := zip.Create(z, module.Version{Path: path, Version: version}, files); err != nil {
		return "", err
	}
	fmt.Printf("modcheck: published %s@%s (%d files tracked)\n", path, version, len(files))
	return path, z.Close()
}

// trackedFiles answers the files git tracks under dir, read from the disk, so
// the check covers the tree as it would be tagged and not untracked output.
func trackedFiles(dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", dir, err)
	}
	var files []zip.File
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		info, err := os.Lstat(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			continue // deleted and not yet committed: not in the tree
		}
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{dir: dir, name: name, info: info})
	}
	return files, nil
}

type diskFile struct {
	dir, name string
	info      os.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.dir, f.name)) }

// install makes a fresh module that gets each path at version from the proxy
// and builds a program importing them.
func install(tmp, proxy, rootPath string, paths []string, version string) error {
	app := filepath.Join(tmp, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		return err
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range paths {
		fmt.Fprintf(&src, "\t_ %q\n", p)
	}
	src.WriteString(")\n\nfunc main() {}\n")
	if err := os.WriteFile(filepath.Join(app, "main.go"), []byte(src.String()), 0o644); err != nil {
		return err
	}
	env, err := installEnv(tmp, proxy)
	if err != nil {
		return err
	}
	get := []string{"get"}
	for _, p := range paths {
		get = append(get, p+"@"+version)
	}
	for _, args := range [][]string{
		{"mod", "init", "example.com/modcheck"},
		get,
		{"build", "-o", os.DevNull, "."},
		append([]string{"list", "-m", rootPath}, paths...),
	} {
		if err := goCmd(app, env, args...); err != nil {
			return err
		}
	}
	fmt.Println("modcheck: ok: a fresh module got and built", strings.Join(paths, ", "), "at", version)
	return nil
}

// installEnv is the fresh module's environment: no workspace, a module cache
// of its own (so the versions published here never reach the real one), the
// proxy on disk first, then the real cache's downloads and the configured
// proxies for the third-party modules, and no checksum database for leaseq's
// own modules, which it has never seen at these versions.
func installEnv(tmp, proxy string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY", "GOFLAGS").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	v := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(v) != 3 {
		return nil, fmt.Errorf("go env: unexpected output %q", out)
	}
	cache, proxies, flags := v[0], v[1], v[2]
	chain := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))
	if proxies != "" && proxies != "off" {
		chain += "," + proxies
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOPROXY="+chain,
		"GOPRIVATE=", "GONOPROXY=",
		"GONOSUMDB=github.com/leaseq/leaseq",
		"GOFLAGS="+strings.TrimSpace(flags+" -mod=mod"),
	), nil
}

func goCmd(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Println("modcheck: go", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// removeAll removes the temporary directory, the module cache in it first:
// the go command makes that read-only.
func removeAll(tmp string) {
	cmd := exec.Command("go", "clean", "-modcache")
	cmd.Env = append(os.Environ(), "GOMODCACHE="+filepath.Join(tmp, "modcache"))
	_ = cmd.Run()
	_ = os.RemoveAll(tmp)
}
