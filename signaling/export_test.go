package signaling

import "github.com/concordrtc/concord/signaling/sigclient"

// The client's wire helpers under their old names, for the tests that drive the server with
// hand-made messages.
type serverMessage = sigclient.ServerMessage

var (
	decodeServerMessage = sigclient.DecodeServerMessage
	wsURL               = sigclient.WebSocketURL
)

const (
	maxICEServers     = sigclient.MaxICEServers
	maxResumeTokenLen = sigclient.MaxResumeTokenLen
)
