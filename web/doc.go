// Package web owns Concord's browser side: the page served at "/", the JavaScript client (plain
// ES modules, no bundler, no build step) and the room inspector at "/inspect". The files under
// static/ are embedded into the binary; Handler serves them.
//
// Handler is safe for concurrent use; the package owns no goroutines.
package web
