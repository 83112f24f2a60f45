package signal

// Bandwidth adaptation messages (docs/protocol.md), server → client only.
const (
	TypeSuspended = "suspended"
	TypeStats     = "stats"
)

// Suspended lists the forwarded videos the SFU stopped sending this receiver for
// lack of bandwidth: the client shows them as paused for bandwidth, not frozen.
type Suspended struct {
	IDs []string `json:"ids"`
}

// Stats is the SFU's view of one receiver's downlink, sent about once a second.
type Stats struct {
	Estimate  int                   `json:"estimate"`  // send-side bandwidth estimate, bits/s (the start value until feedback)
	Allocated int                   `json:"allocated"` // bits/s the chosen layers take, audio included
	Switches  int                   `json:"switches"`  // changes of a playing or suspended video's layers since join
	Videos    map[string]VideoStats `json:"videos"`    // by source participant id
}

// VideoStats is what one forwarded video gets.
type VideoStats struct {
	Encoding  int  `json:"encoding"`  // simulcast encoding chosen (0 = lowest; -1 none)
	Temporal  int  `json:"temporal"`  // highest temporal layer chosen
	Bitrate   int  `json:"bitrate"`   // measured bits/s of that choice
	Suspended bool `json:"suspended"` // off for lack of bandwidth
}
