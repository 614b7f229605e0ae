package signaling

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/gorilla/websocket"
)

// socket is what a server connection reads and writes: a *websocket.Conn, or on a cluster node
// a relayed member (relayedSocket over a Pipe). The methods and their meaning are
// gorilla/websocket's; one reader and one writer may use it at once, and WriteControl and Close
// may be called from any goroutine. It is unexported: other packages hand the server a Pipe of
// frames (ServeRelayed), never a websocket look-alike.
type socket interface {
	SetReadLimit(limit int64)
	SetPongHandler(h func(appData string) error)
	SetPingHandler(h func(appData string) error)
	SetReadDeadline(t time.Time) error
	NextReader() (messageType int, r io.Reader, err error)
	SetWriteDeadline(t time.Time) error
	WriteMessage(messageType int, data []byte) error
	NextWriter(messageType int) (io.WriteCloser, error)
	WriteControl(messageType int, data []byte, deadline time.Time) error
	Close() error
}

var _ socket = (*websocket.Conn)(nil)

// Router places rooms on the nodes of a cluster (Config.Router): a websocket's join names a room,
// and the room is served either here or, relayed, on the node that owns it.
type Router interface {
	// Route is called with the room of a websocket's authorized join, before the server admits
	// it. A nil Pipe and nil error: this node serves the room (it holds the room's lease). A
	// Pipe: another node does, and the server relays the websocket's frames through it (the
	// join first). An error refuses the join with it.
	Route(ctx context.Context, room RoomID) (Pipe, error)
	// Rooms lists every room of the cluster (GET /api/rooms), each with its owner's Node.
	Rooms(ctx context.Context) ([]RoomInfo, error)
}

// FrameKind says what a relayed Frame carries.
type FrameKind uint8

// Frame kinds: a websocket's messages and control frames.
const (
	FrameText   FrameKind = iota + 1 // a text message: the protocol's JSON, batched or not
	FrameBinary                      // a binary message, which the protocol refuses: no data travels
	FramePing                        // a ping; Data is its application data
	FramePong                        // a pong; Data is its application data
	FrameClose                       // a close frame; Data is its RFC 6455 payload (2-byte code, reason)
)

// Frame is one websocket frame of a member, carried between the node that accepted the
// websocket (the edge) and the node that owns its room.
type Frame struct {
	Kind FrameKind
	Data []byte
}

// Pipe carries one member's frames between two nodes of a cluster: Router.Route returns the
// edge's end, and the owner serves its end with ServeRelayed. The implementation (package
// internal/cluster) keeps the other side alive with heartbeats; the server keeps the websocket.
type Pipe interface {
	// Send sends a frame to the other side without waiting for it.
	Send(f Frame) error
	// Recv delivers the other side's frames, in order.
	Recv() <-chan Frame
	// Done is closed when the other side is gone: silent past its heartbeat timeout, too slow
	// to keep up, or the pipe closed.
	Done() <-chan struct{}
	// Close ends this side; the other is told (an abnormal closure, 1006) unless a close frame
	// was sent already. Idempotent.
	Close() error
}

// route reads a websocket's first message and asks the Router where its room lives. It returns
// the message read (nil if none could be: the socket is closed then), and a Pipe when another
// node serves the room, or an error to refuse the join with. A first message that is no
// authorized join is left to the local connection, which refuses it.
func (s *Server) route(ws *websocket.Conn) (first []byte, relay Pipe, err error) {
	ws.SetReadLimit(s.cfg.ReadLimit)
	_ = ws.SetReadDeadline(time.Now().Add(s.cfg.JoinTimeout))
	typ, r, err := ws.NextReader()
	if err != nil {
		return nil, nil, nil
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, nil, nil
	}
	first = buf.Bytes()
	var m clientMessage
	if typ != websocket.TextMessage || decodeClientMessage(first, &m) != nil || m.Type != typeJoin {
		return first, nil, nil
	}
	if _, err := s.authorize(&m); err != nil {
		return first, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.JoinTimeout)
	defer cancel()
	relay, err = s.cfg.Router.Route(ctx, m.Room)
	return first, relay, err
}

// ServeRelayed serves a member whose websocket another node of the cluster accepted, its frames
// carried by p, as if it had been accepted here, until it ends; remote names it in logs. It does
// not count against MaxConns or MaxConnsPerAddr, which the accepting node enforces.
func (s *Server) ServeRelayed(p Pipe, remote string) {
	ws := newRelayedSocket(p)
	if !s.enter() {
		_ = ws.Close()
		return
	}
	defer s.wg.Done()
	s.serveConn(ws, nil, nil, remote)
}

// serveConn runs a connection on ws: first is its first message if already read, refuse an
// error to refuse its join with.
func (s *Server) serveConn(ws socket, first []byte, refuse error, remote string) {
	c := newConn(s, ws, s.log)
	c.remote = remote
	c.first, c.refuse = first, refuse
	if !s.register(c) {
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, string(CodeServerClosing)),
			time.Now().Add(s.cfg.WriteWait))
		_ = ws.Close()
		return
	}
	defer s.unregister(c)
	c.start()
	c.readLoop()
}

// evCloseRoom ends every connection of a room (its lease moved to another node).
type evCloseRoom struct {
	room RoomID
	done chan int // buffered, capacity 1: how many members were closed
}

// CloseRoom closes the websocket of every member of room with close code 1001 and
// "server_closing", so that they redial and resume on the node that owns the room now. It returns how
// many members it closed.
func (s *Server) CloseRoom(room RoomID) int {
	done := make(chan int, 1)
	if !s.post(&evCloseRoom{room: room, done: done}) {
		return 0
	}
	select {
	case n := <-done:
		return n
	case <-s.quit:
		return 0
	}
}

func (h *hub) closeRoom(ev *evCloseRoom) {
	r := h.rooms[ev.room]
	if r == nil {
		ev.done <- 0
		return
	}
	ms := append([]*member(nil), r.members...)
	for _, m := range ms {
		m.c.shutdown(closeInfo{reason: ReasonLost, graceful: true, code: websocket.CloseGoingAway, text: string(CodeServerClosing)})
	}
	for _, m := range ms {
		if h.members[m.c] == m {
			h.remove(m, ReasonLost)
		}
	}
	r.log.Info().Int("members", len(ms)).Msg("room closed here: its lease moved to another node")
	ev.done <- len(ms)
}
