package media

import "errors"

var (
	// ErrShortPacket means the bytes end before a field the headers announce.
	ErrShortPacket = errors.New("media: packet too short")
	// ErrBadVersion means the RTP version is not 2.
	ErrBadVersion = errors.New("media: RTP version is not 2")
	// ErrBadPadding means the padding count is zero or longer than the payload.
	ErrBadPadding = errors.New("media: bad RTP padding")
	// ErrBadExtension means an RFC 8285 element overruns its extension block.
	ErrBadExtension = errors.New("media: malformed RTP header extension")
	// ErrFieldAbsent means a rewrite targets a field the descriptor lacks;
	// in-place rewriting cannot add fields.
	ErrFieldAbsent = errors.New("media: field not present")
)
