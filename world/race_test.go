//go:build race

package world_test

// raceOn: the race detector slows the lab some tenfold and multiplies its memory; it runs
// fewer bots then (TestWorldLab).
const raceOn = true
