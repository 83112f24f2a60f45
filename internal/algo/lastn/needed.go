package lastn

// Needed returns, in order, the senders whose video at least one receiver
// selects. Every other sender in order can be told to stop sending video
// (video pausing); with no pins that is K−N−1 senders when K > N+1.
//
// selections holds each receiver's Select result. Ids not in order are
// ignored, so the result is always a subsequence of order.
func Needed(order []ID, selections [][]ID) []ID {
	selected := make(map[ID]struct{}, len(order))
	for _, sel := range selections {
		for _, id := range sel {
			selected[id] = struct{}{}
		}
	}
	var needed []ID
	for _, id := range order {
		if _, ok := selected[id]; ok {
			needed = append(needed, id)
		}
	}
	return needed
}
