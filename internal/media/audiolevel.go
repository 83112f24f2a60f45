package media

// AudioLevel decodes an RFC 6464 client-to-mixer audio level extension
// payload, as returned by FindExtension. level is in −dBov: 0 is the loudest,
// 127 silence. voice is the V bit (the sender's voice activity guess, which
// browsers may leave unset). ok is false when ext is empty.
func AudioLevel(ext []byte) (level uint8, voice bool, ok bool) {
	if len(ext) == 0 {
		return 0, false, false
	}
	return ext[0] & 0x7f, ext[0]&0x80 != 0, true
}
