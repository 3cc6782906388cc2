//go:build race

package main

// raceBuild: the program under test is built with the race detector when the tests run with it.
var raceBuild = []string{"-race"}
