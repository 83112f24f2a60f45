package bwe

import "time"

// Feedback is one decoded transport-wide congestion control report
// (draft-holmer-rmcat-transport-wide-cc-extensions-01): the fate of the
// packets numbered BaseSeq, BaseSeq+1, … as the receiver saw them.
//
// The caller owns Packets and may reuse it between reports; OnFeedback does
// not keep it. FromTransportCC fills one from pion's rtcp.TransportLayerCC.
type Feedback struct {
	BaseSeq uint16
	// Packets[i] is the packet with transport-wide sequence BaseSeq+i.
	Packets []Packet
}

// Packet is the receiver's report on one packet.
type Packet struct {
	// Arrival is the receive time on the receiver's clock, from an arbitrary
	// origin (for TWCC: reference time × 64 ms plus the deltas). Only
	// differences between arrivals are used. Meaningful when Received.
	Arrival  time.Duration
	Received bool
}
