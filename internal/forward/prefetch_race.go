//go:build race

package forward

// prefetchAhead does nothing in race builds: its reads without the
// destinations' locks would be reported.
func prefetchAhead(downs []*DownTrack, i int) {}
