//go:build webapp

package frontend

import (
	"embed"
	"io/fs"
)

// dist is the web app as vite built it (frontend/dist, precompressed .br and
// .gz siblings included). "all:" keeps files whose names start with "." or
// "_", which vite may emit. The build fails here when dist is missing: build
// the app first (make build does).
//
//go:embed all:dist
var dist embed.FS

func init() {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is a valid path: cannot happen
	}
	app = sub
}
