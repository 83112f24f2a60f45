package signal

import (
	"slices"
	"strconv"
)

// Stats goes to every receiver every second. json.Marshal writes a map with
// reflection, boxing and a sorted copy of its keys (about 40 allocations for
// seven videos); appendFields writes the same bytes (TestStatsFastPathIsJSON,
// FuzzStatsFastPath) into the frame alone.

// fieldsAppender is a body that writes its JSON fields (no braces) as
// json.Marshal would, or reports false to leave the body to json.Marshal.
type fieldsAppender interface {
	appendFields(dst []byte) ([]byte, bool)
	sizeHint() int // the frame's usual length, so that it is allocated once
}

// maxFastVideos bounds the videos whose ids are sorted on the stack.
const maxFastVideos = 32

func (s *Stats) sizeHint() int {
	if s == nil {
		return 64
	}
	return 128 + 96*len(s.Videos)
}

func (s *Stats) appendFields(b []byte) ([]byte, bool) {
	if s == nil || len(s.Videos) > maxFastVideos {
		return b, false
	}
	var keys [maxFastVideos]string
	ids := keys[:0]
	for id := range s.Videos {
		if !plainJSON(id) {
			return b, false
		}
		ids = append(ids, id)
	}
	slices.Sort(ids) // json.Marshal's order
	b = append(b, `"estimate":`...)
	b = strconv.AppendInt(b, int64(s.Estimate), 10)
	b = append(b, `,"allocated":`...)
	b = strconv.AppendInt(b, int64(s.Allocated), 10)
	b = append(b, `,"switches":`...)
	b = strconv.AppendInt(b, int64(s.Switches), 10)
	b = append(b, `,"videos":`...)
	if s.Videos == nil {
		return append(b, "null"...), true
	}
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		v := s.Videos[id]
		b = append(b, '"')
		b = append(b, id...)
		b = append(b, `":{"encoding":`...)
		b = strconv.AppendInt(b, int64(v.Encoding), 10)
		b = append(b, `,"temporal":`...)
		b = strconv.AppendInt(b, int64(v.Temporal), 10)
		b = append(b, `,"bitrate":`...)
		b = strconv.AppendInt(b, int64(v.Bitrate), 10)
		b = append(b, `,"suspended":`...)
		b = strconv.AppendBool(b, v.Suspended)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// plainJSON: s is a JSON string as it is (printable ASCII that json.Marshal
// does not escape).
func plainJSON(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
