// Package web holds the browser client, built into dist/ by `npm run build`.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Files returns the built client: the contents of web/dist.
func Files() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path; fs.Sub cannot fail
	}
	return sub
}

// Built reports whether the client has been built (dist/index.html exists).
func Built() bool {
	_, err := fs.Stat(dist, "dist/index.html")
	return err == nil
}
