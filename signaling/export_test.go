package signaling

// killForTest closes the client's TCP connection without a close frame, as a
// crashed process or a pulled cable would.
func (c *Client) killForTest() { _ = c.ws.NetConn().Close() }
