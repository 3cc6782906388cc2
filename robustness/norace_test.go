//go:build !race

package robustness

// raceBuild is how the nodes are built (see race_test.go).
var raceBuild []string
