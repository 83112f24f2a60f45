// Package rewrite projects a simulcast source onto one receiver: it turns the
// three encodings a sender transmits (each with its own SSRC, sequence
// numbers, timestamps, VP8 picture ids and TL0PICIDX) into one continuous VP8
// RTP stream, switching encodings at key frames and dropping temporal layers,
// so that the receiver's jitter buffer and decoder never see a discontinuity
// (thesis ch. 5.1; system spec section 5).
//
// A Projector is a pure state machine for one (source, receiver) pair: it
// never reads the clock (arrival time is passed in), starts no goroutine,
// takes no lock, logs nothing and does not allocate per packet. The caller
// owns it from one goroutine. Project decides and returns the output values;
// Apply writes them into the packet bytes (decide, then apply).
//
// Guarantees, for packets the caller feeds in arrival order:
//
//   - Nothing is forwarded before a key frame of the target encoding, and
//     every switch (start, up, down, resume, resynchronisation) begins with
//     a key frame's first packet.
//   - Output sequence numbers are contiguous across switches. A gap appears
//     only where forwarded input was lost or arrived too late to fill its
//     slot; packets skipped by temporal filtering or of other encodings leave
//     no gap. Late packets map to the slot they would have had.
//   - Output timestamps are the input's plus a per-segment offset; at a
//     switch the first packet gets last + max(1, elapsed wall time) in
//     90 kHz units, so they never go backwards and follow wall time.
//   - VP8 picture ids go up by one per forwarded frame, TL0PICIDX by one per
//     TL0 frame and KEYIDX by one per switch, also across switches.
package rewrite
