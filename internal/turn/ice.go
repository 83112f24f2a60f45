package turn

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// ICEServer mirrors RTCIceServer (signal.ICEServer).
type ICEServer struct {
	URLs       []string
	Username   string
	Credential string
}

// Minter hands each participant, at join, the TURN servers with credentials
// minted for it: the embedded server's URLs and external ones sharing the
// secret (TURN REST), or external ones with a static username and credential.
type Minter struct {
	Secret []byte
	TTL    time.Duration
	// Minted are the TURN URLs whose credentials are minted per participant.
	Minted []string
	// Static are servers handed out as they are (STUN, or TURN with a fixed
	// username and credential).
	Static []ICEServer
}

// Servers are the ICE servers for participant user at now: nil when there are none.
func (m *Minter) Servers(user string, now time.Time) []ICEServer {
	if m == nil {
		return nil
	}
	out := make([]ICEServer, 0, len(m.Static)+1)
	if len(m.Minted) > 0 && ValidUser(user) {
		username, password := Mint(m.Secret, user, now.Add(m.TTL))
		out = append(out, ICEServer{URLs: m.Minted, Username: username, Credential: password})
	}
	return append(out, m.Static...)
}

// EmbeddedURLs are the URLs of the embedded server at host: turn: over UDP,
// turn: over TCP, turns: (TLS over TCP); a port of 0 leaves that one out.
func EmbeddedURLs(host string, udpPort, tcpPort, tlsPort int) []string {
	host = strings.Trim(host, "[]") // JoinHostPort brackets an IPv6 address
	var urls []string
	if udpPort != 0 {
		urls = append(urls, "turn:"+net.JoinHostPort(host, strconv.Itoa(udpPort))+"?transport=udp")
	}
	if tcpPort != 0 {
		urls = append(urls, "turn:"+net.JoinHostPort(host, strconv.Itoa(tcpPort))+"?transport=tcp")
	}
	if tlsPort != 0 {
		urls = append(urls, "turns:"+net.JoinHostPort(host, strconv.Itoa(tlsPort))+"?transport=tcp")
	}
	return urls
}
