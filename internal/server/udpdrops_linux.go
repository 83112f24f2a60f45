package server

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// newUDPDrops returns the fraction of UDP datagrams the kernel refused to
// queue for want of send buffer since the previous call (SndbufErrors against
// OutDatagrams in /proc/net/snmp: the whole host, read once a second, nothing
// on the packet path). 0 when the counters cannot be read.
func newUDPDrops() func() float64 {
	lastOut, lastErr, _ := udpSendCounters()
	return func() float64 {
		out, errs, ok := udpSendCounters()
		if !ok {
			return 0
		}
		dOut, dErr := out-lastOut, errs-lastErr
		wrapped := out < lastOut || errs < lastErr
		lastOut, lastErr = out, errs
		if wrapped || dOut+dErr == 0 {
			return 0
		}
		return float64(dErr) / float64(dOut+dErr)
	}
}

func udpSendCounters() (out, sndbufErrors uint64, ok bool) {
	f, err := os.Open("/proc/net/snmp")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = fields
			continue
		}
		for i := 1; i < len(fields) && i < len(names); i++ {
			v, _ := strconv.ParseUint(fields[i], 10, 64)
			switch names[i] {
			case "OutDatagrams":
				out = v
			case "SndbufErrors":
				sndbufErrors = v
			}
		}
		return out, sndbufErrors, true
	}
	return 0, 0, false
}
