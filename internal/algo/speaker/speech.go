package speaker

// Speech is a participant's recent speech activity as of the last decision:
// how much of the last second (Long, of Config.LongBlocks blocks) and of the
// newest block (Medium, of Config.MediumBlock levels) was speech.
type Speech struct {
	ID     ID
	Long   int
	Medium int
}

// Speech appends every known participant's activity to dst, in order of
// arrival. It reads the state of the last HandleTimeout and changes nothing.
func (d *Detector) Speech(dst []Speech) []Speech {
	for _, p := range d.parts {
		dst = append(dst, Speech{ID: p.id, Long: p.act.long, Medium: p.act.medium})
	}
	return dst
}
