package lastn

import (
	"slices"
	"testing"
)

func ids(s ...string) []ID {
	out := make([]ID, len(s))
	for i, v := range s {
		out[i] = ID(v)
	}
	return out
}

func TestOrder(t *testing.T) {
	type step struct {
		op      string // add, remove, promote, stage
		args    []ID
		changed bool
		want    []ID
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"join order", []step{
			{"add", ids("a"), true, ids("a")},
			{"add", ids("b"), true, ids("a", "b")},
			{"add", ids("c"), true, ids("a", "b", "c")},
			{"add", ids("b"), false, ids("a", "b", "c")},
		}},
		{"promote moves to front", []step{
			{"add", ids("a"), true, ids("a")},
			{"add", ids("b"), true, ids("a", "b")},
			{"add", ids("c"), true, ids("a", "b", "c")},
			{"promote", ids("c"), true, ids("c", "a", "b")},
			{"promote", ids("c"), false, ids("c", "a", "b")},
			{"promote", ids("b"), true, ids("b", "c", "a")},
			{"promote", ids("zz"), false, ids("b", "c", "a")},
		}},
		{"remove", []step{
			{"add", ids("a"), true, ids("a")},
			{"add", ids("b"), true, ids("a", "b")},
			{"remove", ids("a"), true, ids("b")},
			{"remove", ids("a"), false, ids("b")},
			{"remove", ids("b"), true, ids()},
		}},
		{"on-stage kept on top", []step{
			{"add", ids("a"), true, ids("a")},
			{"add", ids("b"), true, ids("a", "b")},
			{"add", ids("c"), true, ids("a", "b", "c")},
			{"stage", ids("c"), true, ids("c", "a", "b")},
			{"promote", ids("b"), true, ids("c", "b", "a")},
			{"promote", ids("a"), true, ids("c", "a", "b")},
			{"add", ids("d"), true, ids("c", "a", "b", "d")},
		}},
		{"promote of on-stage id", []step{
			{"add", ids("a"), true, ids("a")},
			{"add", ids("b"), true, ids("a", "b")},
			{"add", ids("c"), true, ids("a", "b", "c")},
			{"stage", ids("b", "c"), true, ids("b", "c", "a")},
			{"promote", ids("c"), true, ids("c", "b", "a")},
			// Leaving the stage, c keeps its place as most recent speaker.
			{"stage", ids("b"), true, ids("b", "c", "a")},
			// Off stage, b falls back behind a: it never spoke, a joined first.
			{"stage", nil, true, ids("c", "a", "b")},
		}},
		{"stage before join", []step{
			{"add", ids("a"), true, ids("a")},
			{"stage", ids("p"), false, ids("a")},
			{"add", ids("p"), true, ids("p", "a")},
			{"remove", ids("p"), true, ids("a")},
			{"add", ids("p"), true, ids("p", "a")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Order
			for i, s := range tt.steps {
				var changed bool
				switch s.op {
				case "add":
					changed = o.Add(s.args[0])
				case "remove":
					changed = o.Remove(s.args[0])
				case "promote":
					changed = o.Promote(s.args[0])
				case "stage":
					changed = o.SetOnStage(s.args)
				default:
					t.Fatalf("bad op %q", s.op)
				}
				if changed != s.changed {
					t.Errorf("step %d %s %v: changed = %v, want %v", i, s.op, s.args, changed, s.changed)
				}
				if got := o.IDs(); !slices.Equal(got, s.want) {
					t.Errorf("step %d %s %v: IDs = %v, want %v", i, s.op, s.args, got, s.want)
				}
				if o.Len() != len(s.want) {
					t.Errorf("step %d: Len = %d, want %d", i, o.Len(), len(s.want))
				}
			}
		})
	}
}

// A returned view must stay valid while the order keeps changing, so the room
// loop can publish it to other goroutines.
func TestOrderViewImmutable(t *testing.T) {
	var o Order
	o.Add("a")
	o.Add("b")
	o.Add("c")
	snap := o.IDs()
	want := slices.Clone(snap)
	o.Promote("c")
	o.Remove("a")
	o.SetOnStage(ids("b"))
	o.Add("d")
	if !slices.Equal(snap, want) {
		t.Fatalf("snapshot changed to %v, want %v", snap, want)
	}
}

// TestOrderArrange: another bridge's order taken as it is for the members
// both know, the members only known here kept behind in their order, the
// stage still on top, unknown and repeated ids skipped.
func TestOrderArrange(t *testing.T) {
	var o Order
	for _, id := range ids("a", "b", "c", "d") {
		o.Add(id)
	}
	o.SetOnStage(ids("d"))
	if !o.Arrange(ids("c", "x", "a", "c")) {
		t.Fatal("Arrange reported no change")
	}
	if got, want := o.Recency(), ids("c", "a", "b", "d"); !slices.Equal(got, want) {
		t.Errorf("recency %v, want %v", got, want)
	}
	if got, want := o.IDs(), ids("d", "c", "a", "b"); !slices.Equal(got, want) {
		t.Errorf("view %v, want %v", got, want)
	}
	if o.Arrange(ids("c", "a")) {
		t.Error("arranging as it is reported a change")
	}
	o.Promote("b")
	if got, want := o.Recency(), ids("b", "c", "a", "d"); !slices.Equal(got, want) {
		t.Errorf("after a promotion %v, want %v", got, want)
	}
}
