//go:build !race

package world_test

const raceOn = false
