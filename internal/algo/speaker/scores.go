package speaker

import "math"

// minScore floors every score: scores are divided by each other (through
// their logarithms), so they must stay positive.
const minScore = 1e-10

// Level converts an RFC 6464 header value (0 = loudest, 127 = silence, in
// −dBov; the top bit is the voice-activity flag) to a level where 0 is silence
// and 127 the loudest.
func Level(rfc6464 uint8) uint8 {
	return MaxLevel - rfc6464&0x7f
}

// score is the speech activity score of v active sub-units out of n: the log
// likelihood ratio of speech presence (binomial with probability p) against
// absence (exponential with parameter lambda), floored at minScore.
func score(v, n int, p, lambda float64) float64 {
	s := logBinomial(n, v) + float64(v)*math.Log(p) + float64(n-v)*math.Log(1-p) -
		math.Log(lambda) + lambda*float64(v)
	return max(s, minScore)
}

// logBinomial returns ln C(n, k).
func logBinomial(n, k int) float64 {
	k = min(k, n-k)
	s := 0.0
	for i := 1; i <= k; i++ {
		s += math.Log(float64(n-k+i)) - math.Log(float64(i))
	}
	return s
}

// logScores tabulates ln score(v) for v = 0..n so the decision needs no
// logarithm: c = ln(score_i / score_dominant) = ln score_i − ln score_dominant.
func logScores(n int, p, lambda float64) []float64 {
	t := make([]float64, n+1)
	for v := range t {
		t[v] = math.Log(score(v, n, p, lambda))
	}
	return t
}

// immediate maps a level to its number of active sub-bands. Levels less than
// one sub-unit above the participant's noise floor count as silence, which
// puts participants with different background noise on an equal footing.
func immediate(level, floor uint8, subunit int) int {
	if int(level) < int(floor)+subunit {
		return 0
	}
	return int(level) / subunit
}

// activity is a participant's count of active sub-units on each time scale,
// taken from the newest end of its history.
type activity struct {
	immediate int // active sub-bands of the newest level (0..N1-1)
	medium    int // immediates above MediumThreshold in the newest block (0..N2)
	long      int // medium blocks above LongThreshold in the history (0..N3)
}

// scales holds what turns a level history into log scores.
type scales struct {
	subunit                  int
	block, blocks            int
	mediumThresh, longThresh int
	logImm, logMed, logLong  []float64
}

func newScales(c Config) scales {
	return scales{
		subunit:      c.subunit(),
		block:        c.MediumBlock,
		blocks:       c.LongBlocks,
		mediumThresh: c.MediumThreshold,
		longThresh:   c.LongThreshold,
		logImm:       logScores(c.Subbands, c.P, c.LambdaImmediate),
		logMed:       logScores(c.MediumBlock, c.P, c.LambdaMedium),
		logLong:      logScores(c.LongBlocks, c.P, c.LambdaLong),
	}
}

// activity evaluates a history given newest first (newest(0) is the latest
// level). Each medium block counts its immediates above the medium threshold,
// and the long interval counts the blocks above the long threshold; only the
// newest block and the newest immediate are scored, as in the reference.
func (s *scales) activity(h *history, floor uint8) activity {
	var a activity
	for b := 0; b < s.blocks; b++ {
		n := 0
		for i := b * s.block; i < (b+1)*s.block; i++ {
			imm := immediate(h.newest(i), floor, s.subunit)
			if i == 0 {
				a.immediate = imm
			}
			if imm > s.mediumThresh {
				n++
			}
		}
		if b == 0 {
			a.medium = n
		}
		if n > s.longThresh {
			a.long++
		}
	}
	return a
}

// logScores returns ln score on the three scales for an activity.
func (s *scales) logScores(a activity) [3]float64 {
	return [3]float64{
		s.logImm[min(a.immediate, len(s.logImm)-1)],
		s.logMed[a.medium],
		s.logLong[a.long],
	}
}
