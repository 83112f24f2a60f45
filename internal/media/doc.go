// Package media parses and rewrites RTP packets and codec payload
// descriptors in place.
//
// All input is untrusted bytes from the network: every function checks bounds
// and returns an error or false rather than panicking. Nothing here allocates,
// so the per-packet path can use it freely; for the same reason errors are
// the bare sentinels below, never wrapped with per-call detail.
package media
