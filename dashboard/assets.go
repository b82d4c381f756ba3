package dashboard

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assetFiles embed.FS

// assetVersions are the first hex digits of each asset's SHA-256, put in
// its URL so that a browser may cache it for long and still never use a
// stale copy after an upgrade.
var assetVersions = hashAssets()

func hashAssets() map[string]string {
	m := map[string]string{}
	err := fs.WalkDir(assetsFS(), ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assetsFS(), path)
		sum := sha256.Sum256(b)
		m[path] = hex.EncodeToString(sum[:6])
		return err
	})
	if err != nil {
		panic(err)
	}
	return m
}

// assetURL is the relative, versioned URL of the asset name.
func assetURL(name string) string {
	return "assets/" + name + "?v=" + assetVersions[name]
}

// assetHandler serves the embedded assets. They may be cached for a day:
// their URLs change with their content.
func assetHandler() http.Handler {
	files := http.StripPrefix("/assets/", http.FileServerFS(assetsFS()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(w, r)
	})
}

// assetsFS is the embedded assets directory.
func assetsFS() fs.FS {
	sub, err := fs.Sub(assetFiles, "assets")
	if err != nil {
		panic(err)
	}
	return sub
}
