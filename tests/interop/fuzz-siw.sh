#!/usr/bin/env bash
# Points `iwarp fuzz-peer` at a siw server guest (rdma-core's `rping -s -P`)
# for each siw build given, and reports what siw does with every hostile
# case. Not part of run.sh's matrix: siw answers several cases otherwise
# than the RFCs assign, and those are findings about siw, not failures of
# the harness.
#
# Usage: tests/interop/fuzz-siw.sh [--out DIR] [--mutate N] [BUILD...]
#   BUILD     siw builds to fuzz (default: default crc; cxgb takes its
#             kernel down, see below; rev1 cannot be fuzzed)
#   --mutate  also play N seeded mutants after the catalogue
#   --out     where reports and captures go (default target/interop/fuzz-<time>)
#
# A build passes when fuzz-peer ran to completion and wrote its report, and
# every case siw failed is one of the deviations listed below for it; a
# failure not listed (or a listed one that now passes) fails the build, so
# the list stays true. Environment as run.sh (IWARP_BIN, ...). Needs root
# and a finished tests/interop/setup.sh.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=netns.sh
. "$INTEROP_DIR/netns.sh"
# shellcheck source=guest.sh
. "$INTEROP_DIR/guest.sh"

RPING_PORT=7174
# Seconds the siw guest's rping server may run: the whole catalogue,
# including the silent cases that outwait siw's MPA timer.
GUEST_LIMIT=900
# siw's MPA timer (MPA_TIMEOUT in siw_cm.c: 10 s).
SIW_MPA_TIMEOUT=10

# What siw 6.1 does otherwise than the RFCs assign, per build: case names
# (docs/hostile-peer.md says what it does in each).
#   unknown-revision           closes without a Reply with R
#   ulpdu-too-short            no TERMINATE, the connection stays open
#   huge-ulpdu-then-silence    TERMINATE 1/2/0x02 (no buffer) at once
#   unsolicited-read-response  TERMINATE 1/0/0x00 (DDP catastrophic)
#   idle-flood                 most idle connections outlive its MPA
#                              timer; then new connections are reset
#   bad-crc (cxgb)             the guest kernel hits BUG() in iw_cm's
#                              close handler (iwcm.c:969); nothing serves
#                              after it, so the later cases are skipped
# The rev1 build cannot be fuzzed: siw's rping cannot READ under rev 1,
# so no liveness check passes (status 2).
siw_deviations() {
	case "$1" in
	default | crc)
		echo "unknown-revision ulpdu-too-short huge-ulpdu-then-silence unsolicited-read-response idle-flood"
		;;
	cxgb) echo "unknown-revision bad-crc" ;;
	rev1) echo "" ;;
	*) return 1 ;;
	esac
}

# Flags that make fuzz-peer's start-up match a build's policy.
fuzz_flags() {
	case "$1" in
	default) echo "" ;;
	crc) echo "--crc" ;;
	cxgb) echo "--crc --p2p write" ;;
	rev1) echo "--crc --mpa-rev 1" ;;
	*) return 1 ;;
	esac
}

# fuzz BUILD REPORT ARGS...: fuzz-peer at the siw server with the build's
# MPA flags; stdout to REPORT (JSON unless mutating), stderr to fuzz.log.
fuzz() {
	local build=$1 report=$2
	shift 2
	local fmt=--json
	case " $* " in *" --mutate "*) fmt= ;; esac
	# shellcheck disable=SC2046 # the flags are words
	ip netns exec "$NETNS" timeout 1500 "$BIN" fuzz-peer "$SIW_SERVER_IP:$RPING_PORT" \
		$(fuzz_flags "$build") --target-timeout "$SIW_MPA_TIMEOUT" $fmt \
		--out "$dir/pcaps" "$@" >"$report" 2>>"$dir/fuzz.log"
}

out_dir=
mutants=0
builds=()
while [ $# -gt 0 ]; do
	case "$1" in
	--out)
		out_dir=$2
		shift 2
		;;
	--mutate)
		mutants=$2
		shift 2
		;;
	-h | --help)
		sed -n '2,17p' "$0"
		exit 0
		;;
	*)
		builds+=("$1")
		shift
		;;
	esac
done
[ ${#builds[@]} -gt 0 ] || builds=(default crc)

need_root
load_setup_env
BIN=$(iwarp_bin)
iwarp_has_subcommand fuzz-peer || die "$BIN has no fuzz-peer subcommand (cargo build --release -p iwarp)"
out_dir=${out_dir:-$REPO_ROOT/target/interop/fuzz-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out_dir"
netns_create

failed=0
summary=()
for build in "${builds[@]}"; do
	fuzz_flags "$build" >/dev/null || die "unknown siw build $build"
	dir=$out_dir/$build
	mkdir -p "$dir"
	log "$build: booting the siw server guest"
	guest_start s "$build" "$SIW_SERVER_IP" "rping -s -P -a $SIW_SERVER_IP -p $RPING_PORT" \
		"$GUEST_LIMIT" "$dir/server.log"
	srv_pid=$GUEST_PID
	if ! guest_wait_marker "$dir/server.log" IWARP-INTEROP-READY "$GUEST_BOOT_ALLOWANCE" "$srv_pid"; then
		log "$build: the guest never came up: $(guest_setup_failure "$dir/server.log")"
		summary+=("$build FAIL guest did not boot")
		failed=1
		kill "$srv_pid" 2>/dev/null || true
		guest_wait "$srv_pid" || true
		netns_del_tap qs
		continue
	fi
	capture_start "$dir/fuzz.pcap"
	# rping needs a moment after the marker to listen; fuzz-peer's first
	# legitimate ping fails (status 2) until it does. The idle flood goes
	# last, on its own: a target it takes down has nothing more to show.
	rc=2
	for _ in $(seq 1 15); do
		rc=0
		fuzz "$build" "$dir/report.json" --skip idle-flood || rc=$?
		[ "$rc" = 2 ] || break
		sleep 2
	done
	if [ "$mutants" -gt 0 ] && [ "$rc" != 2 ]; then
		mrc=0
		fuzz "$build" "$dir/mutation.txt" --mutate --seed 1 --iterations "$mutants" \
			--answer-within 2 || mrc=$?
		log "$build: $mutants mutant(s): status $mrc"
	fi
	frc=2
	if [ "$rc" != 2 ]; then
		frc=0
		fuzz "$build" "$dir/flood.json" --cases idle-flood || frc=$?
	fi
	capture_stop
	kill "$srv_pid" 2>/dev/null || true
	guest_wait "$srv_pid" || true
	netns_del_tap qs
	if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
		log "$build: fuzz-peer did not complete (status $rc): $(tail -n 3 "$dir/fuzz.log")"
		summary+=("$build FAIL fuzz-peer status $rc")
		failed=1
		continue
	fi
	if [ "$frc" != 0 ] && [ "$frc" != 1 ]; then
		log "$build: the idle flood did not run (status $frc)"
	fi
	# Which cases siw failed, against the deviations listed for the build.
	reports=$dir/report.json
	[ ! -s "$dir/flood.json" ] || reports="$reports $dir/flood.json"
	# shellcheck disable=SC2086 # one argument per report
	got=$(python3 -c 'import json,sys
print(" ".join(c["case"] for f in sys.argv[1:] for c in json.load(open(f))["cases"] if c["verdict"]=="FAIL"))' $reports)
	# shellcheck disable=SC2086
	skipped=$(python3 -c 'import json,sys
print(sum(c["verdict"]=="SKIP" for f in sys.argv[1:] for c in json.load(open(f))["cases"]))' $reports)
	# shellcheck disable=SC2086
	python3 -c 'import json,sys
for f in sys.argv[1:]:
    for c in json.load(open(f))["cases"]:
        print("| `%s` | %s | %s | %s |" % (c["case"], c["expected"], c["observed"], c["verdict"]))' \
		$reports >"$dir/table.md"
	want=$(siw_deviations "$build")
	unexpected=
	for c in $got; do
		case " $want " in *" $c "*) ;; *) unexpected+=" $c" ;; esac
	done
	stale=
	for c in $want; do
		case " $got " in *" $c "*) ;; *) stale+=" $c" ;; esac
	done
	if [ -z "$unexpected" ] && [ -z "$stale" ]; then
		summary+=("$build PASS deviations:${got:- none}; skipped: $skipped")
	else
		summary+=("$build FAIL new:${unexpected:- none} no longer seen:${stale:- none}")
		failed=1
	fi
done

printf '\n%-8s %-5s %s\n' build result notes
for line in "${summary[@]}"; do
	read -r b r rest <<<"$line"
	printf '%-8s %-5s %s\n' "$b" "$r" "$rest"
done
log "reports in $out_dir/<build>/report.json, tables in table.md"
exit "$failed"
