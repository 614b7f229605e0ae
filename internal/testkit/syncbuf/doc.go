// Package syncbuf is a bytes.Buffer that several goroutines may write and a test read at once:
// the writer of a logger, a child process's output, pion's goroutines. Tests only.
package syncbuf
