package rewrite

// TimestampOffset is what the current segment adds to input RTP timestamps
// (modulo 2^32), so a sender report of the forwarded encoding can be
// translated into the output timeline. Meaningless while Current is -1.
func (p *Projector) TimestampOffset() uint32 { return p.tsOffset }
