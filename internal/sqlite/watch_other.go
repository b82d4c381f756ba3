//go:build !linux

package sqlite

// watchFile polls the change counter (pollFile): the kernel's file
// notifications are used on Linux only.
func (e *Engine) watchFile(stop, done chan struct{}) { e.pollFile(stop, done) }
