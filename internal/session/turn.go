package session

import "github.com/podium-sfu/podium/internal/signal"

// iceServers are the STUN servers and, with credentials minted for this
// participant, the TURN servers: the client uses them for every connection,
// to the SFU and to the other participant (P2P).
func (s *Session) iceServers() []signal.ICEServer {
	out := iceServers(s.deps.Engine)
	for _, srv := range s.deps.TURN.Servers(s.id, s.now()) {
		out = append(out, signal.ICEServer{URLs: srv.URLs, Username: srv.Username, Credential: srv.Credential})
	}
	return out
}
