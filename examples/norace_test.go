//go:build !race

package examples_test

var raceBuild []string
