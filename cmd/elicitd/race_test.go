//go:build race

package main

// raceBuild is how the binaries under test are built: with the race detector when the tests
// run with it, so a race inside a binary's own process fails the test that provoked it.
var raceBuild = []string{"-race"}
