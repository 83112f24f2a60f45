package signal

// Hybrid P2P for two-party calls (docs/protocol.md, "Peer to peer"). While a
// room has exactly two participants the server tells both to open a direct
// peer connection (p2p, on) and relays that connection's offer, answer and
// candidates between exactly those two; it reads nothing of them but their
// size. Each client reports its direct connection's state (p2p-state), and the
// server stops forwarding to a client that receives the other directly.
const (
	TypeP2P          = "p2p"           // server → client: P2P mode on (with the peer and who offers) or off
	TypeP2POffer     = "p2p-offer"     // both ways: the initiator's offer, relayed to the peer
	TypeP2PAnswer    = "p2p-answer"    // both ways: the responder's answer, relayed to the initiator
	TypeP2PCandidate = "p2p-candidate" // both ways: a trickled ICE candidate of the direct connection
	TypeP2PState     = "p2p-state"     // client → server: the direct connection's state
)

// P2P error codes; none ends the session.
const (
	CodeP2PNotPeer     = "p2p-not-peer"     // relayed to someone who is not the sender's current P2P peer (or in another epoch)
	CodeP2PTooLarge    = "p2p-too-large"    // an SDP or candidate beyond MaxP2PSDPBytes / MaxP2PCandidateBytes
	CodeP2PRateLimited = "p2p-rate-limited" // more P2P relay messages than P2PRate / P2PBurst allow
)

// P2P relay bounds: the server relays these without reading them, so it bounds
// what one participant can make it carry to another.
const (
	MaxP2PSDPBytes       = 32 << 10
	MaxP2PCandidateBytes = 1024
)

// P2P states a client reports (p2p-state).
const (
	P2PConnected = "connected" // media flows on the direct connection: stop forwarding to me
	P2PFailed    = "failed"    // its ICE failed: back to the SFU, no retry until the room size changes
	P2PClosed    = "closed"    // closed by the client (back on the SFU)
)

// P2PMode is the server's p2p message. On: open a direct connection to Peer in
// this Epoch; the Initiator (the lower participant id) sends the offer. Off:
// back to the SFU (Reason says why); the SFU forwards again before it is sent.
type P2PMode struct {
	On        bool   `json:"on"`
	Epoch     uint64 `json:"epoch"`
	Peer      string `json:"peer,omitempty"`
	Initiator bool   `json:"initiator,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// P2PSignal is p2p-offer, p2p-answer and p2p-candidate: To on the way in,
// From (set by the server) on the way out; SDP for offers and answers,
// Candidate for candidates (null: end of candidates).
type P2PSignal struct {
	To        string     `json:"to,omitempty"`
	From      string     `json:"from,omitempty"`
	Epoch     uint64     `json:"epoch"`
	SDP       string     `json:"sdp,omitempty"`
	Candidate *Candidate `json:"candidate,omitempty"`
}

// P2PState is what a client reports of its direct connection in Epoch.
type P2PState struct {
	Epoch uint64 `json:"epoch"`
	State string `json:"state"`
}

func validateP2PSignal(typ string, p *P2PSignal) error {
	if p.To == "" || len(p.To) > 64 {
		return Errorf(CodeBadMessage, false, "%s: to must be a participant id", typ)
	}
	p.From = "" // the server sets it
	switch typ {
	case TypeP2POffer, TypeP2PAnswer:
		if p.SDP == "" {
			return Errorf(CodeBadSDP, false, "%s: empty sdp", typ)
		}
		if len(p.SDP) > MaxP2PSDPBytes {
			return Errorf(CodeP2PTooLarge, false, "%s: sdp of %d bytes, at most %d", typ, len(p.SDP), MaxP2PSDPBytes)
		}
		if p.Candidate != nil {
			return Errorf(CodeBadMessage, false, "%s: no candidate in an offer or answer", typ)
		}
	case TypeP2PCandidate:
		if p.SDP != "" {
			return Errorf(CodeBadMessage, false, "%s: no sdp in a candidate", typ)
		}
		if c := p.Candidate; c != nil {
			n := len(c.Candidate)
			if c.SDPMid != nil {
				n += len(*c.SDPMid)
			}
			if c.UsernameFragment != nil {
				n += len(*c.UsernameFragment)
			}
			if n > MaxP2PCandidateBytes {
				return Errorf(CodeP2PTooLarge, false, "%s: candidate of %d bytes, at most %d", typ, n, MaxP2PCandidateBytes)
			}
		}
	}
	return nil
}

func validateP2PState(p *P2PState) error {
	switch p.State {
	case P2PConnected, P2PFailed, P2PClosed:
		return nil
	}
	return Errorf(CodeBadMessage, false, "p2p-state: state must be %q, %q or %q", P2PConnected, P2PFailed, P2PClosed)
}
