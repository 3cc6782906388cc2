module github.com/elicitd/elicitd/deploy/check

go 1.26.8
