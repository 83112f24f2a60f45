//go:build !linux

package wire

// readerSys without recvmmsg: one datagram per read.
type readerSys struct{}

func (s *readerSys) init(*Reader) error { return nil }

func (s *readerSys) fill(r *Reader) error {
	var oob []byte
	if r.oob != nil {
		oob = r.oob[:ReadOOBSize]
	}
	n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(r.buf[:ReadSlotSize], oob)
	if err != nil {
		return err
	}
	r.Calls++
	r.Datagrams++
	r.lens[0], r.oobns[0], r.froms[0], r.n = n, oobn, from, 1
	return nil
}
