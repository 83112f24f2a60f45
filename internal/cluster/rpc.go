package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Subjects: a node answers requests on podium.node.<id>.<name>.
func subject(node, name string) string { return "podium.node." + node + "." + name }

// errHeader carries a handler's error in a reply.
const errHeader = "Podium-Error"

// Handle answers requests for name on this node with h: its reply, or its
// error (sent in a header) when it fails. Handlers run on NATS's delivery
// goroutine for this subscription, one at a time.
func (n *Node) Handle(name string, h func(req []byte) ([]byte, error)) error {
	sub, err := n.nc.Subscribe(subject(n.cfg.NodeID, name), func(m *nats.Msg) {
		reply := nats.NewMsg(m.Reply)
		body, err := h(m.Data)
		if err != nil {
			reply.Header.Set(errHeader, err.Error())
		} else {
			reply.Data = body
		}
		_ = m.RespondMsg(reply)
	})
	if err != nil {
		return fmt.Errorf("cluster: handle %s: %w", name, err)
	}
	n.mu.Lock()
	n.subs = append(n.subs, sub)
	n.mu.Unlock()
	return nil
}

// ErrNoResponders: the node is gone or does not answer name.
var ErrNoResponders = nats.ErrNoResponders

// Request asks node for name and waits for its reply until ctx ends.
func (n *Node) Request(ctx context.Context, node, name string, req []byte) ([]byte, error) {
	m, err := n.nc.RequestWithContext(ctx, subject(node, name), req)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s on %s: %w", name, node, err)
	}
	if e := m.Header.Get(errHeader); e != "" {
		return nil, fmt.Errorf("cluster: %s on %s: %w", name, node, errors.New(e))
	}
	return m.Data, nil
}
