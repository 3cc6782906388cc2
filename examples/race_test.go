//go:build race

package examples_test

// raceBuild: the programs the README runs are built with the race detector when the tests
// run with it, so a race inside an example fails the run that provoked it.
var raceBuild = []string{"-race"}
