#!/bin/sh
# demo.sh: the README's first command.
#
# It builds elicitd (the server) and elicit (the terminal client) into bin/, which git
# ignores, then runs a dry-run create_shipment on the partial UPS shipment in
# examples/create-shipment.json: elicitd finds the fields the shipment lacks, asks for them
# in one form in this terminal, and prints the completed request it would send to UPS.
# Nothing is sent anywhere.
#
# Arguments are elicit's own flags, given before its "call" subcommand, e.g.
#   ./demo.sh --answers examples/create-shipment.answers.json
#
# Progress goes to stderr. On a terminal it is one status line, cleared just before elicit
# draws its form, so the form starts on a clean line; otherwise it is plain lines.
set -eu
cd "$(dirname "$0")"

if ! command -v go >/dev/null 2>&1; then
	echo "demo.sh: Go 1.26 or newer is needed (https://go.dev/dl/), and go is not on PATH" >&2
	exit 1
fi

if [ -t 2 ] && [ "${TERM:-dumb}" != dumb ]; then
	say() { printf '\r\033[K%s' "$1" >&2; }
	unsay() { printf '\r\033[K' >&2; }
else
	say() { printf '%s\n' "$1" >&2; }
	unsay() { :; }
fi

say "building elicitd and elicit..."
# The build's own output (module downloads, errors) is shown only if it fails.
if ! out=$(go build -o bin/ ./cmd/elicitd ./cmd/elicit 2>&1); then
	unsay
	printf '%s\n' "$out" >&2
	echo "demo.sh: the build failed (Go 1.26 or newer is needed; go version says: $(go version))" >&2
	exit 1
fi
say "starting..."
unsay
exec bin/elicit "$@" call create_shipment --args @examples/create-shipment.json -- bin/elicitd
