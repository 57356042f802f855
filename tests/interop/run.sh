#!/usr/bin/env bash
# Runs interop cases between Linux soft-iWARP (siw) guests and, once it has
# an `rping` subcommand, the project's `iwarp` tool; prints a summary table
# and exits non-zero when a case did not do what it is expected to do.
#
# Usage: tests/interop/run.sh [--list] [--out DIR] [PATTERN...]
#   PATTERN   shell glob over case names (default: every case), e.g.
#             'siw-siw/*'  'siw-siw/crc/*'  '*/cxgb/65000'
#   --list    print the selected cases and what they expect, run nothing
#   --out     where logs and captures go (default target/interop/<time>)
# Environment: IWARP_BIN (default target/release/iwarp), IWARP_SHIM_DIR
#   (the rdma-shim library, default target/release/rdma-shim),
#   IWARP_INTEROP_CACHE (see setup.sh), IWARP_INTEROP_BOOT_SECS,
#   IWARP_INTEROP_SEQUENTIAL_BOOT=1 (boot the client guest only after the
#   server guest is up, instead of both at once), IWARP_INTEROP_PERFTEST=0
#   (leave those cases out), IWARP_INTEROP_LOSSY=1 (add the lossy cases;
#   run-lossy.sh runs them alone).
# Needs root and a finished tests/interop/setup.sh.
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=netns.sh
. "$INTEROP_DIR/netns.sh"
# shellcheck source=guest.sh
. "$INTEROP_DIR/guest.sh"
# shellcheck source=cases.sh
. "$INTEROP_DIR/cases.sh"
# shellcheck source=check.sh
. "$INTEROP_DIR/check.sh"
# shellcheck source=lossy.sh
. "$INTEROP_DIR/lossy.sh"

RPING_PORT=7174
# Seconds a case's commands may run once started.
SIW_SIW_LIMIT=60
IWARP_LIMIT=180
# The same for a lossy case (1000 pings of 65000 bytes each way).
LOSSY_LIMIT=600
# Seconds an end may go on after its peer has exited (see wait_pair).
PEER_GONE_GRACE=20
# How often a case that did not do what it should is run again, and how
# often more when its guest's network device stopped transmitting
# (guest_went_silent in check.sh) or its kernel died booting
# (guest_boot_failed in guest.sh).
RETRIES=${IWARP_INTEROP_RETRIES:-1}
STALL_RETRIES=${IWARP_INTEROP_STALL_RETRIES:-2}

list_only=0
out_dir=
patterns=()
while [ $# -gt 0 ]; do
	case "$1" in
	--list) list_only=1 ;;
	--out)
		out_dir=$2
		shift
		;;
	-h | --help)
		awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
		exit 0
		;;
	*) patterns+=("$1") ;;
	esac
	shift
done
[ "${#patterns[@]}" -gt 0 ] || patterns=('*')

selected=()
while read -r line; do
	name=${line%% *}
	for p in "${patterns[@]}"; do
		# shellcheck disable=SC2053 # glob match on purpose
		if [[ $name == $p ]]; then
			selected+=("$line")
			break
		fi
	done
done < <(interop_cases)
[ "${#selected[@]}" -gt 0 ] || die "no case matches: ${patterns[*]}"

if [ "$list_only" = 1 ]; then
	printf '%-38s %-6s %s\n' CASE EXPECT NOTE
	for line in "${selected[@]}"; do
		read -r name kind variant size count expect <<<"$line"
		printf '%-38s %-6s %s\n' "$name" "$expect" "$(known_unsupported "$kind" "$variant")"
	done
	exit 0
fi

need_root
load_setup_env
for tool in $RUN_TOOLS; do
	command -v "$tool" >/dev/null || die "missing $tool: run tests/interop/setup.sh"
done
out_dir=${out_dir:-$REPO_ROOT/target/interop/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
log "kernel $KVER, results in $out_dir"

have_iwarp_rping=0
iwarp_has_subcommand rping && have_iwarp_rping=1
if iwarp_has_subcommand decode; then
	log "captures are also checked with $(iwarp_bin) decode"
else
	log "$(iwarp_bin) has no decode subcommand: captures are checked with tshark only"
fi

netns_create

# Outcome of one case, set by the run_* functions: a guest or tool status per
# end ("none" when it never reported one), plus a note, and the client's
# wall time in milliseconds (its guest's measure, or ours around the tool).
SERVER_RC=none
CLIENT_RC=none
CASE_NOTE=
CLIENT_MS=
# netem parameters for the server and the client guest of the next case
# (empty: a clean link), and flags our tool gets in it beyond the usual.
NETEM_SERVER=
NETEM_CLIENT=
IWARP_EXTRA=
# Our tool's TCP loss recovery counters at exit, when it can print them.
have_tcp_stats=0
if [ "$have_iwarp_rping" = 1 ] && "$(iwarp_bin)" rping --help 2>/dev/null | grep -q -- --tcp-stats; then
	have_tcp_stats=1
fi

# A run of rping between two siw guests.
run_siw_siw() {
	local dir=$1 variant=$2 size=$3 count=$4 srv_pid cli_pid
	local args="-C $count -S $size -V -p $RPING_PORT"
	GUEST_NETEM=$NETEM_SERVER guest_start s "$variant" "$SIW_SERVER_IP" "rping -s -a $SIW_SERVER_IP $args" \
		$((SIW_SIW_LIMIT + GUEST_BOOT_ALLOWANCE)) "$dir/server.log"
	srv_pid=$GUEST_PID
	if [ "${IWARP_INTEROP_SEQUENTIAL_BOOT:-0}" = 1 ]; then
		if ! guest_wait_marker "$dir/server.log" IWARP-INTEROP-READY "$GUEST_BOOT_ALLOWANCE" "$srv_pid"; then
			CASE_NOTE="server guest never got ready"
		fi
		sleep 1
		GUEST_WAIT_FOR='' GUEST_NETEM=$NETEM_CLIENT guest_start c "$variant" "$SIW_CLIENT_IP" \
			"rping -c -a $SIW_SERVER_IP $args" "$SIW_SIW_LIMIT" "$dir/client.log"
	else
		GUEST_WAIT_FOR=$SIW_SERVER_IP GUEST_NETEM=$NETEM_CLIENT guest_start c "$variant" "$SIW_CLIENT_IP" \
			"rping -c -a $SIW_SERVER_IP $args" "$SIW_SIW_LIMIT" "$dir/client.log"
	fi
	cli_pid=$GUEST_PID
	wait_pair "$srv_pid" "$cli_pid" "$PEER_GONE_GRACE"
	SERVER_RC=$(guest_result "$dir/server.log")
	[ "$PAIR_RC_A" != killed ] || SERVER_RC=killed
	CLIENT_RC=$(guest_result "$dir/client.log")
	[ "$PAIR_RC_B" != killed ] || CLIENT_RC=killed
	CLIENT_MS=$(guest_elapsed_ms "$dir/client.log")
	netns_del_tap qs
	netns_del_tap qc
}

# The iwarp tool's transport flags and address for a case kind.
iwarp_transport() {
	case "$1" in
	*-tap) echo "$IWARP_TAP_IP --tap $IWARP_TAP --ip $IWARP_TAP_IP/$NET_BITS" ;;
	*) echo "$HOST_IP" ;;
	esac
}

# A program of ours (the command after DIR and VARIANT's guest command) as
# the client, against a siw server guest running GUEST_CMD.
client_against_siw_server() {
	local dir=$1 variant=$2 guest_cmd=$3 srv_pid tool_rc=0 t0
	shift 3
	GUEST_NETEM=$NETEM_SERVER guest_start s "$variant" "$SIW_SERVER_IP" "$guest_cmd" \
		$((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$dir/server.log"
	srv_pid=$GUEST_PID
	if guest_wait_marker "$dir/server.log" IWARP-INTEROP-READY "$GUEST_BOOT_ALLOWANCE" "$srv_pid"; then
		sleep 1
		t0=$(date +%s%N)
		nsx timeout -k 5 "$IWARP_LIMIT" "$@" >"$dir/iwarp.log" 2>&1 || tool_rc=$?
		CLIENT_MS=$((($(date +%s%N) - t0) / 1000000))
		CLIENT_RC=$tool_rc
	else
		CASE_NOTE="server guest never got ready"
	fi
	# Our client has finished: the siw server gets a grace period to end.
	wait_pair "$srv_pid" "" "$PEER_GONE_GRACE"
	SERVER_RC=$(guest_result "$dir/server.log")
	[ "$PAIR_RC_A" != killed ] || SERVER_RC=killed
	netns_del_tap qs
}

# A program of ours (the command after the first four arguments) as the
# server on OUR_ADDR, against a siw client guest running GUEST_CMD.
server_against_siw_client() {
	local dir=$1 variant=$2 our_addr=$3 guest_cmd=$4 tool_pid cli_pid
	shift 4
	# Started directly (not in a function or subshell) so that $! is the
	# pid of `timeout`, which passes a kill on to the tool.
	ip netns exec "$NETNS" timeout -k 5 $((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$@" \
		>"$dir/iwarp.log" 2>&1 &
	tool_pid=$!
	netns_track_pid "$tool_pid"
	# The guest needs several seconds to boot, and then waits for our
	# address to answer ARP: time enough for the server to listen.
	GUEST_WAIT_FOR=$our_addr GUEST_NETEM=$NETEM_CLIENT guest_start c "$variant" "$SIW_CLIENT_IP" \
		"$guest_cmd" "$IWARP_LIMIT" "$dir/client.log"
	cli_pid=$GUEST_PID
	wait_pair "$tool_pid" "$cli_pid" "$PEER_GONE_GRACE"
	SERVER_RC=$PAIR_RC_A
	CLIENT_RC=$(guest_result "$dir/client.log")
	[ "$PAIR_RC_B" != killed ] || CLIENT_RC=killed
	CLIENT_MS=$(guest_elapsed_ms "$dir/client.log")
	netns_del_tap qc
}

# Our `iwarp rping -c` against a siw server guest.
run_iwarp_client() {
	local dir=$1 kind=$2 variant=$3 size=$4 count=$5
	local transport our_addr extra
	transport=$(iwarp_transport "$kind")
	our_addr=${transport%% *}
	extra=${transport#"$our_addr"}
	# shellcheck disable=SC2046,SC2086 # flags split into words on purpose
	client_against_siw_server "$dir" "$variant" \
		"rping -s -a $SIW_SERVER_IP -C $count -S $size -V -p $RPING_PORT" \
		"$(iwarp_bin)" rping -c -a "$SIW_SERVER_IP" -p "$RPING_PORT" \
		-C "$count" -S "$size" -V $(iwarp_policy_flags "$variant") $extra $IWARP_EXTRA
}

# Our `iwarp rping -s` against a siw client guest.
run_iwarp_server() {
	local dir=$1 kind=$2 variant=$3 size=$4 count=$5
	local transport our_addr extra
	transport=$(iwarp_transport "$kind")
	our_addr=${transport%% *}
	extra=${transport#"$our_addr"}
	# shellcheck disable=SC2046,SC2086 # flags split into words on purpose
	server_against_siw_client "$dir" "$variant" "$our_addr" \
		"rping -c -a $our_addr -C $count -S $size -V -p $RPING_PORT" \
		"$(iwarp_bin)" rping -s -a "$our_addr" -p "$RPING_PORT" -C "$count" -S "$size" -V \
		$(iwarp_policy_flags "$variant") $extra $IWARP_EXTRA
}

# Debian's rping over the shim as the client, against a siw server guest.
run_shim_client() {
	local dir=$1 kind=$2 variant=$3 size=$4 count=$5 flag
	flag=$(shim_rping_flag "$kind")
	client_against_siw_server "$dir" "$variant" \
		"rping -s -a $SIW_SERVER_IP -C $count -S $size $flag -p $RPING_PORT" \
		env LD_LIBRARY_PATH="$(shim_dir)" rping -c -a "$SIW_SERVER_IP" \
		-p "$RPING_PORT" -C "$count" -S "$size" "$flag"
}

# Debian's rping over the shim as the server, against a siw client guest.
run_shim_server() {
	local dir=$1 kind=$2 variant=$3 size=$4 count=$5 flag
	flag=$(shim_rping_flag "$kind")
	server_against_siw_client "$dir" "$variant" "$HOST_IP" \
		"rping -c -a $HOST_IP -C $count -S $size $flag -p $RPING_PORT" \
		env LD_LIBRARY_PATH="$(shim_dir)" rping -s -a "$HOST_IP" -p "$RPING_PORT" \
		-C "$count" -S "$size" "$flag"
}

# `iwarp fuzz-peer` with the RFC 7306 cases against a siw server guest's
# persistent rping. The server has no end of its own: it passes when it is
# still running after fuzz-peer (then it is stopped), and fuzz-peer's
# status is the client's (0: every case got the answer it expects).
run_fuzz_rfc7306() {
	local dir=$1 variant=$2 srv_pid rc=2 t0
	guest_start s "$variant" "$SIW_SERVER_IP" "rping -s -P -a $SIW_SERVER_IP -p $RPING_PORT" \
		$((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$dir/server.log"
	srv_pid=$GUEST_PID
	if guest_wait_marker "$dir/server.log" IWARP-INTEROP-READY "$GUEST_BOOT_ALLOWANCE" "$srv_pid"; then
		t0=$(date +%s%N)
		# rping needs a moment after the marker to listen: until it does,
		# fuzz-peer's first liveness ping fails (status 2).
		for _ in $(seq 1 15); do
			rc=0
			# shellcheck disable=SC2046 # the flags are words
			nsx timeout -k 5 "$IWARP_LIMIT" "$(iwarp_bin)" fuzz-peer "$SIW_SERVER_IP:$RPING_PORT" \
				$(iwarp_policy_flags "$variant") --cases "$FUZZ_RFC7306_CASES" --json \
				>"$dir/report.json" 2>>"$dir/iwarp.log" || rc=$?
			[ "$rc" = 2 ] || break
			sleep 2
		done
		CLIENT_MS=$((($(date +%s%N) - t0) / 1000000))
		CLIENT_RC=$rc
		# The whole exchange takes well under a second: give tcpdump time
		# to take the frames from its ring before the capture stops
		# (stopped at once it wrote none of them).
		sleep 2
		CASE_NOTE=$(python3 -c 'import json,sys
print("; ".join("%s: %s" % (c["case"], c["observed"]) for c in json.load(open(sys.argv[1]))["cases"]))' \
			"$dir/report.json" 2>/dev/null || echo "no report")
	else
		CASE_NOTE="server guest never got ready"
	fi
	if kill -0 "$srv_pid" 2>/dev/null; then
		SERVER_RC=0
		kill "$srv_pid" 2>/dev/null || true
		guest_wait "$srv_pid" || true
	else
		SERVER_RC=$(guest_result "$dir/server.log")
	fi
	netns_del_tap qs
}

PERFTEST_PORT=18515

# The arguments of a perftest case's both ends (the client adds the server).
perftest_args() { echo "-R -s $1 -D $PERFTEST_SECS -p $PERFTEST_PORT"; }

# The first result row that follows perftest's table header in LOG (our
# tool prints the same table), squeezed to single spaces.
perftest_row() {
	awk '/#bytes/ { hdr = 1; next } hdr && /^ *[0-9]/ { gsub(/[ \t]+/, " "); sub(/^ /, ""); print; exit }' "$1" 2>/dev/null
}

# ib_* -R between two siw guests.
run_perftest_siw_siw() {
	local dir=$1 variant=$2 size=$3 test=$4 srv_pid cli_pid prog args
	prog=$(perftest_program "$test")
	args=$(perftest_args "$size")
	guest_start s "$variant" "$SIW_SERVER_IP" "$prog $args" \
		$((SIW_SIW_LIMIT + GUEST_BOOT_ALLOWANCE)) "$dir/server.log"
	srv_pid=$GUEST_PID
	GUEST_WAIT_FOR=$SIW_SERVER_IP guest_start c "$variant" "$SIW_CLIENT_IP" \
		"$prog $args $SIW_SERVER_IP" "$SIW_SIW_LIMIT" "$dir/client.log"
	cli_pid=$GUEST_PID
	wait_pair "$srv_pid" "$cli_pid" "$PEER_GONE_GRACE"
	SERVER_RC=$(guest_result "$dir/server.log")
	[ "$PAIR_RC_A" != killed ] || SERVER_RC=killed
	CLIENT_RC=$(guest_result "$dir/client.log")
	[ "$PAIR_RC_B" != killed ] || CLIENT_RC=killed
	CASE_NOTE="client: $(perftest_row "$dir/client.log")"
	netns_del_tap qs
	netns_del_tap qc
}

# The rest of a case whose host side serves perftest (its pid TOOL_PID,
# its output in iwarp.log) to a siw guest's ib_* client: start the guest,
# wait for both, and read their results; NAME labels the host's row.
perftest_guest_client() {
	local dir=$1 variant=$2 prog=$3 args=$4 tool_pid=$5 name=$6 cli_pid
	netns_track_pid "$tool_pid"
	GUEST_WAIT_FOR=$HOST_IP guest_start c "$variant" "$SIW_CLIENT_IP" \
		"$prog $args $HOST_IP" "$IWARP_LIMIT" "$dir/client.log"
	cli_pid=$GUEST_PID
	wait_pair "$tool_pid" "$cli_pid" "$PEER_GONE_GRACE"
	SERVER_RC=$PAIR_RC_A
	CLIENT_RC=$(guest_result "$dir/client.log")
	[ "$PAIR_RC_B" != killed ] || CLIENT_RC=killed
	CASE_NOTE="client: $(perftest_row "$dir/client.log"); $name: $(perftest_row "$dir/iwarp.log")"
	netns_del_tap qc
}

# A siw guest's ib_* client against `iwarp perf` serving on the host.
run_perftest_iwarp_server() {
	local dir=$1 variant=$2 size=$3 test=$4 prog args
	prog=$(perftest_program "$test")
	args=$(perftest_args "$size")
	# shellcheck disable=SC2046,SC2086 # flags split into words on purpose
	ip netns exec "$NETNS" timeout -k 5 $((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$(iwarp_bin)" perf \
		"$(perftest_iwarp_op "$test")" --bind "$HOST_IP" $args $(iwarp_policy_flags "$variant") \
		>"$dir/iwarp.log" 2>&1 &
	perftest_guest_client "$dir" "$variant" "$prog" "$args" $! iwarp
}

# A siw guest's ib_* client against ib_* serving over the shim on the host.
run_perftest_shim_server() {
	local dir=$1 variant=$2 size=$3 test=$4 prog args
	prog=$(perftest_program "$test")
	args=$(perftest_args "$size")
	# shellcheck disable=SC2086 # the arguments are words
	ip netns exec "$NETNS" env LD_LIBRARY_PATH="$(shim_dir)" timeout -k 5 \
		$((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$prog" $args >"$dir/iwarp.log" 2>&1 &
	perftest_guest_client "$dir" "$variant" "$prog" "$args" $! shim
}

# ib_* HOST over the shim against a siw guest's ib_* server.
run_perftest_shim_client() {
	local dir=$1 variant=$2 size=$3 test=$4 srv_pid tool_rc=0 prog args
	prog=$(perftest_program "$test")
	args=$(perftest_args "$size")
	guest_start s "$variant" "$SIW_SERVER_IP" "$prog $args" \
		$((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$dir/server.log"
	srv_pid=$GUEST_PID
	if guest_wait_marker "$dir/server.log" IWARP-INTEROP-READY "$GUEST_BOOT_ALLOWANCE" "$srv_pid"; then
		sleep 1
		# shellcheck disable=SC2086 # the arguments are words
		# The disconnect grace: perftest's siw server sends its last
		# control message just before our client disconnects, and siw
		# flushes it (Bad wc status) if our FIN arrives first.
		nsx env LD_LIBRARY_PATH="$(shim_dir)" IWARP_DISCONNECT_GRACE_MS=300 \
			timeout -k 5 "$IWARP_LIMIT" "$prog" $args \
			"$SIW_SERVER_IP" >"$dir/iwarp.log" 2>&1 || tool_rc=$?
		CLIENT_RC=$tool_rc
	else
		CASE_NOTE="server guest never got ready"
	fi
	wait_pair "$srv_pid" "" "$PEER_GONE_GRACE"
	SERVER_RC=$(guest_result "$dir/server.log")
	[ "$PAIR_RC_A" != killed ] || SERVER_RC=killed
	CASE_NOTE+="${CASE_NOTE:+; }shim: $(perftest_row "$dir/iwarp.log"); server: $(perftest_row "$dir/server.log")"
	netns_del_tap qs
}

# `iwarp perf HOST` against a siw guest's ib_* server.
run_perftest_iwarp_client() {
	local dir=$1 variant=$2 size=$3 test=$4 srv_pid tool_rc=0 prog args
	prog=$(perftest_program "$test")
	args=$(perftest_args "$size")
	guest_start s "$variant" "$SIW_SERVER_IP" "$prog $args" \
		$((IWARP_LIMIT + GUEST_BOOT_ALLOWANCE)) "$dir/server.log"
	srv_pid=$GUEST_PID
	if guest_wait_marker "$dir/server.log" IWARP-INTEROP-READY "$GUEST_BOOT_ALLOWANCE" "$srv_pid"; then
		sleep 1
		# shellcheck disable=SC2046,SC2086 # flags split into words on purpose
		nsx timeout -k 5 "$IWARP_LIMIT" "$(iwarp_bin)" perf "$(perftest_iwarp_op "$test")" \
			"$SIW_SERVER_IP" $args $(iwarp_policy_flags "$variant") \
			>"$dir/iwarp.log" 2>&1 || tool_rc=$?
		CLIENT_RC=$tool_rc
	else
		CASE_NOTE="server guest never got ready"
	fi
	wait_pair "$srv_pid" "" "$PEER_GONE_GRACE"
	SERVER_RC=$(guest_result "$dir/server.log")
	[ "$PAIR_RC_A" != killed ] || SERVER_RC=killed
	CASE_NOTE+="${CASE_NOTE:+; }iwarp: $(perftest_row "$dir/iwarp.log"); server: $(perftest_row "$dir/server.log")"
	netns_del_tap qs
}

# Runs the case described by the loop's variables once; sets result, note
# and secs.
run_one() {
	local dir=$1 t0 f why problems
	SERVER_RC=none
	CLIENT_RC=none
	CASE_NOTE=
	CLIENT_MS=
	NETEM_SERVER=
	NETEM_CLIENT=
	IWARP_EXTRA=
	if [[ $kind == lossy-* ]]; then
		[ "$have_tcp_stats" = 0 ] || IWARP_EXTRA=--tcp-stats
		# Seen by the run_* functions (bash scopes locals dynamically).
		local SIW_SIW_LIMIT=$LOSSY_LIMIT IWARP_LIMIT=$LOSSY_LIMIT
		case "$(lossy_netem_guest "$kind")" in
		server) NETEM_SERVER=$LOSSY_NETEM ;;
		client) NETEM_CLIENT=$LOSSY_NETEM ;;
		esac
	fi
	t0=$(date +%s)
	log "$name: starting ($kind, siw $variant, -S $size -C $count, expect $expect)"
	[ -z "$NETEM_SERVER$NETEM_CLIENT" ] ||
		log "$name: netem in the ${NETEM_SERVER:+server}${NETEM_CLIENT:+client} guest: tc qdisc add dev eth0 root netem $LOSSY_NETEM"
	capture_start "$dir/case.pcap"
	case "$kind" in
	siw-siw | lossy-siw-siw*) run_siw_siw "$dir" "$variant" "$size" "$count" ;;
	iwarp-client-* | lossy-iwarp-client-*) run_iwarp_client "$dir" "$kind" "$variant" "$size" "$count" ;;
	iwarp-server-* | lossy-iwarp-server-*) run_iwarp_server "$dir" "$kind" "$variant" "$size" "$count" ;;
	perftest-siw-siw) run_perftest_siw_siw "$dir" "$variant" "$size" "$count" ;;
	perftest-iwarp-server) run_perftest_iwarp_server "$dir" "$variant" "$size" "$count" ;;
	perftest-iwarp-client) run_perftest_iwarp_client "$dir" "$variant" "$size" "$count" ;;
	shim-client-*) run_shim_client "$dir" "$kind" "$variant" "$size" "$count" ;;
	shim-server-*) run_shim_server "$dir" "$kind" "$variant" "$size" "$count" ;;
	perftest-shim-server) run_perftest_shim_server "$dir" "$variant" "$size" "$count" ;;
	perftest-shim-client) run_perftest_shim_client "$dir" "$variant" "$size" "$count" ;;
	fuzz-rfc7306) run_fuzz_rfc7306 "$dir" "$variant" ;;
	esac
	capture_stop
	secs=$(($(date +%s) - t0))
	result=$(verdict "$expect" "$SERVER_RC" "$CLIENT_RC")
	note="server rc=$SERVER_RC client rc=$CLIENT_RC"
	[ -z "$CASE_NOTE" ] || note+="; $CASE_NOTE"
	for f in "$dir/server.log" "$dir/client.log"; do
		[ -f "$f" ] || continue
		why=$(guest_setup_failure "$f")
		[ -z "$why" ] || note+="; $(basename "$f" .log) setup failed: $why"
	done
	local check_count=$count check_size=$size
	# perftest's message counts depend on its clock: checked for TERMINATEs
	# only (below), not counted; fuzz-peer's TERMINATEs are its report's.
	[[ $kind != perftest-* && $kind != fuzz-* ]] || check_count= check_size=
	local advisory=0
	[[ $kind != lossy-* ]] || advisory=1
	if ! problems=$(TSHARK_CRC_ADVISORY=$advisory check_capture "$dir/case.pcap" "$variant" "$expect" \
		"$check_count" "$check_size"); then
		note+="; ${problems//$'\n'/; }"
		case "$result" in PASS | XFAIL) result=FAIL ;; esac
	fi
	if [[ $kind == perftest-* ]] && [ "$expect" = pass ]; then
		local reads sizes sends terms
		read -r reads sizes sends terms <<<"$(rdmap_message_counts "$dir/case.pcap")"
		if [ "${terms:-0}" != 0 ]; then
			note+="; capture: $terms TERMINATE messages on the wire"
			case "$result" in PASS | XFAIL) result=FAIL ;; esac
		fi
	fi
	STALLED=
	case "$result" in
	PASS | XFAIL) ;;
	*)
		STALLED=$(guest_went_silent "$dir/case.pcap")
		for f in "$dir"/server.log "$dir"/client.log; do
			[ -f "$f" ] || continue
			STALLED+=$(guest_boot_failed "$f")
		done
		[ -z "$STALLED" ] || note+="; ${STALLED//$'\n'/; }"
		;;
	esac
	LOSSY_ROW=
	[[ $kind != lossy-* ]] || lossy_notes "$dir"
	# A bulk perftest or lossy run captures hundreds of MB, and tshark's
	# full decode of it several times that: the decode goes once checked,
	# the capture too when a perftest case passed.
	if [[ $kind == perftest-* || $kind == lossy-* ]]; then
		rm -f "$dir/case.pcap.txt"
		[[ $kind != perftest-* ]] || [ "$result" != PASS ] || rm -f "$dir/case.pcap"
	fi
}

# Prints the end of each log of a case that did not do what it should, so
# that CI's output alone says how it went wrong (the logs themselves stay
# in the case's directory).
show_failure_logs() {
	local dir=$1 f
	for f in "$dir"/server.log "$dir"/client.log "$dir"/iwarp.log; do
		[ -f "$f" ] || continue
		log "$name: the end of $(basename "$f"):"
		guest_log_tail "$f" 12 | sed 's/^/    /'
	done
}

results=()
n_pass=0
n_fail=0
n_skip=0
t_all=$(date +%s)
for line in "${selected[@]}"; do
	read -r name kind variant size count expect <<<"$line"
	dir=$out_dir/${name//\//_}
	mkdir -p "$dir"
	if [[ $kind == iwarp-* ]] && [ "$have_iwarp_rping" = 0 ]; then
		results+=("$name|$expect|SKIP|0|iwarp rping not available ($(iwarp_bin))")
		n_skip=$((n_skip + 1))
		log "$name: SKIP, iwarp rping not available"
		continue
	fi
	if [[ $kind == shim-* || $kind == perftest-shim-* ]] && ! have_shim; then
		results+=("$name|$expect|SKIP|0|the rdma-shim library is not built ($(shim_dir))")
		n_skip=$((n_skip + 1))
		log "$name: SKIP, the rdma-shim library is not built"
		continue
	fi
	if [[ $kind == fuzz-* ]] && ! iwarp_has_subcommand fuzz-peer; then
		results+=("$name|$expect|SKIP|0|iwarp fuzz-peer not available ($(iwarp_bin))")
		n_skip=$((n_skip + 1))
		log "$name: SKIP, iwarp fuzz-peer not available"
		continue
	fi
	run_one "$dir"
	attempt=1
	earlier=
	# A case that did not do what it should runs once more: qemu under TCG
	# on a loaded host has its moments. One whose guest's network device
	# stopped transmitting (STALLED) may run up to STALL_RETRIES times
	# more besides. Every attempt is reported.
	while [ "$result" != PASS ] && [ "$result" != XFAIL ] &&
		{ [ "$attempt" -le "$RETRIES" ] ||
			{ [ -n "$STALLED" ] && [ "$attempt" -le $((RETRIES + STALL_RETRIES)) ]; }; }; do
		earlier+="; retried (attempt $attempt $result in ${secs}s: $note)"
		show_failure_logs "$dir"
		mv "$dir" "$dir.attempt$attempt"
		mkdir -p "$dir"
		log "$name: $result, running it once more"
		attempt=$((attempt + 1))
		run_one "$dir"
	done
	note+=$earlier
	case "$result" in
	PASS | XFAIL) n_pass=$((n_pass + 1)) ;;
	*)
		n_fail=$((n_fail + 1))
		show_failure_logs "$dir"
		;;
	esac
	results+=("$name|$expect|$result|$secs|$note")
	if [[ $kind == lossy-* ]]; then
		LOSSY_ROWS+=("$LOSSY_ROW")
	fi
	log "$name: $result in ${secs}s ($note)"
done

echo
printf '%-38s %-6s %-6s %5s  %s\n' CASE EXPECT RESULT SECS NOTE
for r in "${results[@]}"; do
	IFS='|' read -r name expect result secs note <<<"$r"
	printf '%-38s %-6s %-6s %5s  %s\n' "$name" "$expect" "$result" "$secs" "$note"
done
lossy_table
echo
echo "interop: total $(($(date +%s) - t_all)) s, logs and captures in $out_dir"
echo "interop: $n_pass passed, $n_fail failed, $n_skip skipped"
[ "$n_fail" = 0 ]
