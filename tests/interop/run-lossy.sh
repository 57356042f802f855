#!/usr/bin/env bash
# The lossy cases on their own: netem (loss 2%, delay 1 ms, reorder 5%) in
# one siw guest, 1000 verified rping pings of 65000 bytes between two siw
# guests (the controls) and between siw and our `iwarp rping` on TAP and over
# kernel TCP, in both roles; prints each client's wall time and its ratio to
# the control of the same run. 10-12 minutes on a busy 2-core host.
#
# Usage: tests/interop/run-lossy.sh [--out DIR] [PATTERN...]
#   PATTERN   narrows the lossy cases (default 'lossy-*'), e.g.
#             'lossy-siw-siw/*' 'lossy-iwarp-client-tap/*' (run a case with
#             its control: a ratio needs both in one run)
# Environment: as run.sh; IWARP_INTEROP_LOSSY_COUNT=N pings fewer times, for a
# quick look at the harness (the figures are for 1000).
# Needs root and a finished tests/interop/setup.sh.
set -euo pipefail
args=()
patterns=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out)
		args+=("$1" "$2")
		shift
		;;
	-*) args+=("$1") ;;
	*) patterns+=("$1") ;;
	esac
	shift
done
[ "${#patterns[@]}" -gt 0 ] || patterns=('lossy-*')
for p in "${patterns[@]}"; do
	case "$p" in
	lossy-*) ;;
	*)
		echo "run-lossy.sh: $p: the lossy cases are named lossy-*" >&2
		exit 2
		;;
	esac
done
IWARP_INTEROP_LOSSY=1 exec "$(dirname "$0")/run.sh" "${args[@]}" "${patterns[@]}"
