package main

import (
	"testing"

	"github.com/concordrtc/concord/internal/harness/bench"
)

// TestBenchAllReadsRunScript reads run.mjs's last line as `bench all` does, and checks that the
// quick plan covers both schemas and stays small.
func TestBenchAllReadsRunScript(t *testing.T) {
	out := []byte("fan-out 8 clients × 100 entities\nratios concord/colyseus: CPU 1.2\n" +
		`json {"n":8,"m":100,"seconds":3,"schema":"plain","tls":true,"load":"1 2 3","colyseus":{"cpu":10,"bytes":100,"delivered":1,"p50":40,"p99":50},"concord":{"cpu":12,"bytes":90,"delivered":0.99,"p50":1.5,"p99":3}}` + "\n")
	r, err := parseFanoutRun(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 8 || r.Schema != bench.SchemaPlain || r.Concord.CPU != 12 || r.Colyseus.P99 != 50 || r.Load != "1 2 3" {
		t.Fatalf("read %+v", r)
	}
	if _, err := parseFanoutRun([]byte("no json here\n")); err == nil {
		t.Fatal("no error for output without a json line")
	}
	q := benchAllPlanFor(true)
	schemas := map[string]bool{}
	for _, c := range q.fanout {
		schemas[c.schema] = true
	}
	if !schemas[bench.SchemaPlain] || !schemas[bench.SchemaQuantized] || q.joinBots > 256 || q.migTrials > 5 {
		t.Fatalf("quick plan %+v", q)
	}
	if full := benchAllPlanFor(false); len(full.fanout) != 8 || full.joinBots != 1024 || full.migPeers != 32 {
		t.Fatalf("headline plan %+v", full)
	}
}
