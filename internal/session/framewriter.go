package session

import (
	"context"
	"time"

	"github.com/coder/websocket"
)

// writeTimeout bounds the write of one frame to the client: a client that
// has not taken it by then is closed.
const writeTimeout = 5 * time.Second

// frameWriter writes the session's frames to its WebSocket, closing the
// connection when a write has not returned within its timeout. One timer
// serves every frame: a context with a deadline per frame, which the
// WebSocket then watches with a context.AfterFunc of its own, was about ten
// heap allocations per frame (a tenth of the server's in meeting-8, where
// each participant gets its downlink stats every second). Owned by the
// session's writer goroutine.
type frameWriter struct {
	conn    *websocket.Conn
	timeout time.Duration
	stuck   *time.Timer // armed during a write: closes conn
}

func newFrameWriter(conn *websocket.Conn, timeout time.Duration) *frameWriter {
	w := &frameWriter{conn: conn, timeout: timeout}
	w.stuck = time.AfterFunc(time.Hour, func() { _ = conn.CloseNow() })
	w.stuck.Stop()
	return w
}

// write sends frame as one text message.
func (w *frameWriter) write(frame []byte) error {
	w.stuck.Reset(w.timeout)
	// A context without Done: the WebSocket then sets up no watch of its own.
	err := w.conn.Write(context.Background(), websocket.MessageText, frame)
	w.stuck.Stop()
	return err
}

// stop disarms the timer for good.
func (w *frameWriter) stop() { w.stuck.Stop() }
