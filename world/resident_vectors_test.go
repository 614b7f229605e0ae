package world

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The client's rule on a `resident` word against testdata/world/resident_rule.json, the cases the
// browser's world client checks too (web/test/regions.test.js): the same decision in both.
func TestWorldResidentRuleVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "world", "resident_rule.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Vectors []struct {
			Name           string
			Res            *[2]int
			Gen, Ack       uint32
			Hinted, Silent bool
			From, To       [2]int
			M              struct{ Gen, Ack uint32 }
			Want           string
			Renumber       bool
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	names := map[residentWord]string{wordDrop: "drop", wordHint: "hint", wordRedirect: "redirect", wordAck: "ack", wordTake: "take"}
	reg := func(c [2]int) Region { return Region{World: "w", X: c[0], Y: c[1]} }
	for _, v := range f.Vectors {
		var res Region
		if v.Res != nil {
			res = reg(*v.Res)
		}
		word, renumber := residentRule(res, v.Gen, v.Ack, v.Hinted, v.Silent, reg(v.From).Room(), reg(v.To), resident{Gen: v.M.Gen, Ack: v.M.Ack})
		if names[word] != v.Want || renumber != v.Renumber {
			t.Errorf("%s: %s renumber %v, want %s %v", v.Name, names[word], renumber, v.Want, v.Renumber)
		}
	}
}
