package signal

// Cluster messages (docs/cluster.md, docs/protocol.md "Redirect").
const (
	TypeRedirect = "redirect" // server → client: join again at another node, the bridge chosen for you
)

// Redirect answers a join at a node that is not the participant's bridge: the
// server closes the connection right after it, and the client sends the same
// join (token, resume) on a new WebSocket to URL, and uses URL for its
// reconnects from then on.
type Redirect struct {
	// URL is the bridge's signaling WebSocket (ws:// or wss://…/ws), with the
	// query that makes that node serve the join.
	URL string `json:"url"`
	// Node and Region name the bridge; Reason says why it was chosen.
	Node   string `json:"node"`
	Region string `json:"region"`
	Reason string `json:"reason"`
}
