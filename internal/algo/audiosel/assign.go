package audiosel

import "slices"

// Assign maps the speakers one receiver should hear (want, itself left out)
// onto its fixed slots in place: a speaker already in a slot keeps it, so its
// stream never moves; newcomers take the slots freed, in want's order. ""
// marks an empty slot. Speakers beyond the slots are left out. It reports
// whether any slot changed.
func Assign(slots []ID, want []ID) bool {
	changed := false
	for i, id := range slots {
		if id != "" && !slices.Contains(want, id) {
			slots[i], changed = "", true
		}
	}
	for _, id := range want {
		if slices.Contains(slots, id) {
			continue
		}
		free := slices.Index(slots, "")
		if free < 0 {
			break
		}
		slots[free], changed = id, true
	}
	return changed
}
