//go:build !linux

package bench

import "errors"

// The floor forwarder needs Linux (recvmmsg, sendmmsg, UDP GSO).
type floorForwarder struct{ floorCounters }

// FloorConfig is what the parent tells the forwarder child.
type FloorConfig struct {
	Key     []byte      `json:"key"`
	Streams [][]int32   `json:"streams"`
	Dests   []FloorDest `json:"dests"`
}

// FloorDest is one receiver: its address and key.
type FloorDest struct {
	Addr string `json:"addr"`
	Key  []byte `json:"key"`
}

const (
	rtpHeaderLen = 12
	twExtLen     = 8
	gcmTagLen    = 16
	floorMTU     = 1500
)

func newFloorForwarder(FloorConfig) (*floorForwarder, error) {
	return nil, errors.New("floor: the forwarder needs Linux")
}

func (*floorForwarder) Addr() string { return "" }
func (*floorForwarder) Close() error { return nil }
func (*floorForwarder) run()         {}
