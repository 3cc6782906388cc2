//go:build race

package robustness

// raceBuild: the nodes are built with the race detector when the suite runs with it.
var raceBuild = []string{"-race"}
