#!/usr/bin/env bash
# Runs COMMAND... URL TOKEN against a fresh syncstore-devserver on 127.0.0.1 (seeded contacts).
#   run_with_devserver.sh DEVSERVER COMMAND...
set -euo pipefail
devserver=$1; shift
token=example-token
out=$(mktemp)
"$devserver" --host 127.0.0.1 --port 0 --token "$token" --seed Contact=120 >"$out" 2>/dev/null &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 300); do [[ -s "$out" ]] && break; sleep 0.1; done
url=$(head -1 "$out")
[[ "$url" == http://127.0.0.1:* ]] || { echo "devserver did not start"; exit 1; }
"$@" "$url" "$token"
