// Package wire is the data plane's own socket layer, under the media path once
// pion has finished a connection's handshake: SRTP contexts keyed from the DTLS
// handshake (Keys), where a connection's media goes (Route, Dest), and batched
// reads and sends on the SFU's shared UDP sockets (Reader: recvmmsg, Batch:
// sendmmsg on Linux; both raw calls that never pass through the scheduler's
// system-call path).
//
// Pion keeps ICE (but for consent on a connection's selected pair, which the
// data plane keeps with this package's STUN), DTLS, SDP, SCTP and RTCP; RTP
// the SFU forwards is protected with this package's contexts and written to
// the socket by the goroutine that forwarded it, in one system call per
// batch, with no lock held.
//
// It imports nothing of the project.
package wire
