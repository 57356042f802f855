#!/usr/bin/env bash
# Tests of the harness itself that need no root, qemu or network: the capture
# checks against the reference siw captures (each must pass as the build that
# made it and fail as any other, and a capture with one corrupted CRC must
# fail), the verdicts, the guest marker parsing, the silent-guest check and
# the case list.
#
# Usage: tests/interop/selftest.sh     (needs tshark and editcap)
# The reference captures sit in ../shared/captures beside the repository; a
# clone without them skips those tests and says so.
# shellcheck source-path=SCRIPTDIR
set -uo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=guest.sh
. "$INTEROP_DIR/guest.sh"
# shellcheck source=cases.sh
. "$INTEROP_DIR/cases.sh"
# shellcheck source=check.sh
. "$INTEROP_DIR/check.sh"
# shellcheck source=lossy.sh
. "$INTEROP_DIR/lossy.sh"

CAPTURES=${IWARP_INTEROP_CAPTURES:-$REPO_ROOT/../shared/captures}
# The tools the checks below call. A missing one is named here: with
# IWARP_REQUIRE_ALL=1 (CI) the self-test stops, otherwise the capture checks
# skip; it is never left to show up as a check that read nothing.
SELFTEST_TOOLS="tshark editcap tcpdump python3 awk"
absent_tools=""
for t in $SELFTEST_TOOLS; do
	command -v "$t" >/dev/null || absent_tools="$absent_tools $t"
done
if [ -n "$absent_tools" ] && [ "${IWARP_REQUIRE_ALL:-0}" = 1 ]; then
	echo "FAIL missing tools:$absent_tools (.ci/packages lists their packages; .ci/install-packages installs them)"
	exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
skipped=0

ok() {
	passed=$((passed + 1))
	echo "ok   $*"
}
not_ok() {
	failed=$((failed + 1))
	echo "FAIL $*"
}
# expect_eq WHAT GOT WANT
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: got '$2', want '$3'"; fi
}

# --- verdicts ---------------------------------------------------------------
expect_eq "verdict pass/0/0" "$(verdict pass 0 0)" PASS
expect_eq "verdict pass/255/0" "$(verdict pass 255 0)" FAIL
expect_eq "verdict pass/0/1" "$(verdict pass 0 1)" FAIL
expect_eq "verdict fail/255/0" "$(verdict fail 255 0)" XFAIL
expect_eq "verdict fail/0/0" "$(verdict fail 0 0)" XPASS
expect_eq "verdict pass/none/0" "$(verdict pass none 0)" HANG
expect_eq "verdict fail/124/1" "$(verdict fail 124 1)" HANG
expect_eq "verdict pass/0/124" "$(verdict pass 0 124)" HANG
expect_eq "verdict fail/killed/1" "$(verdict fail killed 1)" HANG
expect_eq "verdict pass/0/killed" "$(verdict pass 0 killed)" HANG
expect_eq "verdict pass/1240/0 is no hang" "$(verdict pass 1240 0)" FAIL

# --- guest markers ----------------------------------------------------------
printf 'boot noise\r\nIWARP-INTEROP-READY\r\nrping output\r\nIWARP-INTEROP-RESULT rc=255\r\n[ 9.1] reboot: Power down\r\n' >"$TMP/g1.log"
expect_eq "result marker with CRLF" "$(guest_result "$TMP/g1.log")" 255
printf '[    0.032000] ..MP-BIOS bug: 8254 timer not connected to IO-APIC\r\n[    0.072000] Kernel panic - not syncing: IO-APIC + timer doesn'"'"'t work!\r\n' >"$TMP/panic.log"
expect_eq "boot panic recognised" "$(guest_boot_failed "$TMP/panic.log")" \
	"guest kernel panicked while booting: Kernel panic - not syncing: IO-APIC + timer doesn't work!"
expect_eq "no boot panic after ready" "$(guest_boot_failed "$TMP/g1.log")" ""
expect_eq "a log of kernel lines only has an empty tail" \
	"$(set -e -o pipefail; guest_log_tail "$TMP/panic.log" 12; echo "rc=$?")" "rc=0"
expect_eq "log tail skips kernel lines" "$(guest_log_tail "$TMP/g1.log" 2 | tr -d '\r')" "rping output
IWARP-INTEROP-RESULT rc=255"
printf 'IWARP-INTEROP-READY\nhung here\n' >"$TMP/g2.log"
expect_eq "no result marker" "$(guest_result "$TMP/g2.log")" none
printf 'IWARP-INTEROP-SETUP-FAILED rdma link add siw0\n' >"$TMP/g3.log"
expect_eq "setup failure marker" "$(guest_setup_failure "$TMP/g3.log")" "rdma link add siw0"
expect_eq "no result after setup failure" "$(guest_result "$TMP/g3.log")" none
printf 'echo IWARP-INTEROP-RESULT rc=0 inside a line\n' >"$TMP/g4.log"
expect_eq "marker only at line start" "$(guest_result "$TMP/g4.log")" none
# A lossy guest's console: what netem it applied, what it dropped, how long
# the command ran (the qdisc lines as tc -s prints them).
printf '%s\r\n' 'IWARP-INTEROP-NETEM loss 2% delay 1ms reorder 5%' 'IWARP-INTEROP-READY' \
	'IWARP-INTEROP-ELAPSED ms=48210' \
	'iwarp-interop: netem: qdisc netem 8001: root refcnt 2 limit 1000 delay 1ms loss 2% reorder 5% gap 1' \
	'iwarp-interop: netem:  Sent 1463976 bytes 1518 pkt (dropped 32, overlimits 0 requeues 80) ' \
	'iwarp-interop: netem:  backlog 0b 0p requeues 80' 'IWARP-INTEROP-RESULT rc=0' >"$TMP/g5.log"
expect_eq "netem marker" "$(guest_netem "$TMP/g5.log")" "loss 2% delay 1ms reorder 5%"
expect_eq "elapsed marker" "$(guest_elapsed_ms "$TMP/g5.log")" 48210
expect_eq "netem sent and dropped" "$(guest_netem_drops "$TMP/g5.log")" "1518 32"
expect_eq "result after the netem lines" "$(guest_result "$TMP/g5.log")" 0
expect_eq "no netem, no elapsed on a clean guest" \
	"$(guest_netem "$TMP/g1.log")/$(guest_elapsed_ms "$TMP/g1.log")/$(guest_netem_drops "$TMP/g1.log")" //

# --- waiting on the two ends of a case ---------------------------------------
netns_untrack_pid() { :; } # no namespace here: nothing to untrack
sleep 1 &
a=$!
sleep 30 &
b=$!
t0=$(date +%s)
wait_pair "$a" "$b" 2
expect_eq "wait_pair: finished end's status" "$PAIR_RC_A" 0
expect_eq "wait_pair: end outliving its peer by the grace is killed" "$PAIR_RC_B" killed
expect_eq "wait_pair: kill comes after the grace, not the end's limit" "$(($(date +%s) - t0 < 10))" 1
sh -c 'exit 3' &
a=$!
sh -c 'sleep 1; exit 0' &
b=$!
wait_pair "$a" "$b" 5
expect_eq "wait_pair: both statuses kept" "$PAIR_RC_A/$PAIR_RC_B" 3/0
sleep 30 &
a=$!
wait_pair "$a" "" 1
expect_eq "wait_pair: a single end gets the grace from the start" "$PAIR_RC_A" killed

# --- the case list ----------------------------------------------------------
cases=$(interop_cases)
expect_eq "case count" "$(echo "$cases" | wc -l)" 125
expect_eq "without perftest" "$(IWARP_INTEROP_PERFTEST=0 interop_cases | wc -l)" 65
expect_eq "quick perftest sizes" "$(IWARP_INTEROP_PERFTEST_SIZES=quick interop_cases | grep -c '^perftest-')" 30
expect_eq "lossy cases are opt-in" "$(echo "$cases" | grep -c '^lossy-')" 0
expect_eq "with the lossy cases" "$(IWARP_INTEROP_LOSSY=1 interop_cases | wc -l)" 130
expect_eq "one hostile case, RFC 7306 to siw" "$(echo "$cases" | grep '^fuzz-')" \
	"fuzz-rfc7306/default fuzz-rfc7306 default 0 0 pass"
expect_eq "perftest cases" "$(echo "$cases" | grep -c '^perftest-')" 60
expect_eq "rdma-shim rping cases, both roles, -v and -V" \
	"$(echo "$cases" | awk '$2 ~ /^shim-/ { print $1 }' | tr '\n' ' ')" \
	"shim-client-print/default/65000 shim-client-verify/default/65000 shim-server-print/default/65000 shim-server-verify/default/65000 "
expect_eq "shim rping flags" "$(shim_rping_flag shim-client-print) $(shim_rping_flag shim-server-verify)" "-v -V"
expect_eq "perftest over the shim, both roles" \
	"$(echo "$cases" | grep -c '^perftest-shim-')" 24
expect_eq "perftest cases name their program" \
	"$(echo "$cases" | awk '$2 ~ /^perftest-/ { print $5 }' | sort -u | while read -r t; do perftest_program "$t"; done | tr '\n' ' ')" \
	"ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_write_bw ib_write_lat "
expect_eq "perftest test names as iwarp perf takes them" "$(perftest_iwarp_op write_lat)" write-lat
expect_eq "case names unique" "$(echo "$cases" | cut -d' ' -f1 | sort | uniq -d | wc -l)" 0
expect_eq "siw-siw cases" "$(echo "$cases" | grep -c '^siw-siw/')" 12
expect_eq "known-unsupported siw-siw cases are rev1" \
	"$(echo "$cases" | awk '$2 == "siw-siw" && $6 == "fail" { print $3 }' | sort -u)" rev1
expect_eq "iwarp cases use -C 100" "$(echo "$cases" | awk '$2 ~ /^iwarp-/ && $5 != 100' | wc -l)" 0
expect_eq "every expectation is pass or fail" "$(echo "$cases" | awk '$6 != "pass" && $6 != "fail"' | wc -l)" 0
expect_eq "every fail has a reason" "$(echo "$cases" | while read -r _ k v _ _ e; do
	[ "$e" = fail ] && [ -z "$(known_unsupported "$k" "$v")" ] && echo "$k/$v"
done | wc -l)" 0
expect_eq "policy flags for cxgb" "$(iwarp_policy_flags cxgb)" "--crc --p2p all"
expect_eq "policy flags for rev1" "$(iwarp_policy_flags rev1)" "--mpa-rev 1 --crc"

# --- the lossy cases --------------------------------------------------------
lossy=$(IWARP_INTEROP_LOSSY=1 interop_cases | grep '^lossy-')
expect_eq "lossy cases" "$(echo "$lossy" | cut -d' ' -f1 | tr '\n' ' ')" \
	"lossy-siw-siw/crc/65000 lossy-iwarp-client-tap/crc/65000 lossy-iwarp-client-kernel/crc/65000 lossy-siw-siw-netem-client/crc/65000 lossy-iwarp-server-tap/crc/65000 "
expect_eq "lossy cases are rping -C 1000 -S 65000 on crc, expected to pass" \
	"$(echo "$lossy" | awk '{ print $3, $4, $5, $6 }' | sort -u)" "crc 65000 1000 pass"
expect_eq "the lossy count can be lowered for a quick look" \
	"$(IWARP_INTEROP_LOSSY=1 IWARP_INTEROP_LOSSY_COUNT=20 bash -c ". '$INTEROP_DIR/lib.sh'; . '$INTEROP_DIR/cases.sh'; lossy_cases" | awk '{ print $5 }' | sort -u)" 20
expect_eq "the netem parameters" "$LOSSY_NETEM" "loss 2% delay 1ms reorder 5%"
expect_eq "netem in the server guest for our client and its control" \
	"$(lossy_netem_guest lossy-siw-siw) $(lossy_netem_guest lossy-iwarp-client-tap) $(lossy_netem_guest lossy-iwarp-client-kernel)" \
	"server server server"
expect_eq "netem in the client guest for our server and its control" \
	"$(lossy_netem_guest lossy-siw-siw-netem-client) $(lossy_netem_guest lossy-iwarp-server-tap)" "client client"
expect_eq "a clean kind has no netem guest" "$(lossy_netem_guest siw-siw || echo none)" none
# Every measured case has a control with netem on the same side, listed
# (and so run) before it.
expect_eq "each lossy case follows its control" "$(echo "$lossy" | awk '{ print $2 }' | {
	seen=" "
	while read -r k; do
		c=$(lossy_control "$k")
		if [ -z "$c" ]; then
			case "$k" in lossy-siw-siw*) ;; *) echo "$k: no control" ;; esac
		elif [[ $seen != *" $c "* ]]; then
			echo "$k: $c not before it"
		elif [ "$(lossy_netem_guest "$c")" != "$(lossy_netem_guest "$k")" ]; then
			echo "$k: netem on another side than in $c"
		fi
		seen+="$k "
	done
})" ""
expect_eq "ratio" "$(lossy_ratio 150000 60000)" 2.50
expect_eq "ratio without a control time" "$(lossy_ratio 150000 '')" -
expect_eq "ratio without a time" "$(lossy_ratio '' 60000)" -
# Quiet spells: 0.2 s and more count, with who ended each.
expect_eq "stalls" "$(printf '%s\n' '10.000 a' '10.150 b' '10.360 a' '10.361 b' '11.000 b' '11.100 a' | stalls_from_times)" \
	"2 0.85 0.64 a:1,b:1"
expect_eq "no stalls" "$(printf '%s\n' '1.0 a' '1.1 b' | stalls_from_times)" "0 0.00 0.00 -"
expect_eq "no frames" "$(stalls_from_times </dev/null)" "0 0.00 0.00 -"
# iwarp decode's summary, per direction of the iWARP connection.
cat >"$TMP/decode.txt" <<'DECODE'
summary: 9 packet(s), 9 TCP segment(s), 2 connection(s) (1 iWARP), 4 FPDU(s), 1 CRC error(s)
connection #1 10.99.0.1:1 -> 10.99.0.2:2: not MPA
  c>s tcp 5 byte(s) in 1 segment(s), 7 retransmitted
connection #2 10.99.0.4:49152 -> 10.99.0.2:7174: iWARP, MPA rev 2, CRC on
  c>s 2 FPDU(s), 9 ULPDU byte(s), 9 payload byte(s); send 2; CRC good 2 bad 0 off 0; tcp 99 byte(s) in 3 segment(s), 8 retransmitted
  s>c 2 FPDU(s), 9 ULPDU byte(s), 9 payload byte(s); send 2; CRC good 1 bad 1 off 0; tcp 99 byte(s) in 3 segment(s), 59 retransmitted, 139 out of order, 1 gap(s) of 5 byte(s)
DECODE
expect_eq "decode's TCP counts of the iWARP connection" "$(decode_tcp_counts "$TMP/decode.txt" | tr '\n' ';')" \
	"c>s 8 0 0;s>c 59 139 1;"
expect_eq "decode's TCP counts as a note" "$(lossy_tcp_note "$TMP/decode.txt")" \
	"c>s 8 retransmitted 0 out of order, s>c 59 retransmitted 139 out of order"
expect_eq "no iWARP connection decoded" "$(lossy_tcp_note /dev/null)" "no iWARP connection decoded"
# A lossy case's notes, under run.sh's set -euo pipefail: the control's time
# is kept for the cases after it; files a case lacks (no capture, no tool
# log) leave their figures out instead of ending the run.
RPING_PORT=7174
mkdir -p "$TMP/ctl" "$TMP/tap" "$TMP/bare"
cp "$TMP/g5.log" "$TMP/ctl/server.log"
cp "$TMP/g5.log" "$TMP/tap/server.log"
cp "$TMP/decode.txt" "$TMP/tap/case.pcap.decode.txt"
printf '%s\n' 'client DISCONNECT EVENT...' \
	'tcp: retransmitted 5 segments (7300 bytes), 2 fast recoveries, 1 timeouts, 3 tail loss probes, 0 spurious' >"$TMP/tap/iwarp.log"
printf 'IWARP-INTEROP-READY\nIWARP-INTEROP-RESULT rc=0\n' >"$TMP/bare/server.log"
lossy_out=$(
	set -euo pipefail
	NETEM_SERVER=$LOSSY_NETEM
	name=lossy-siw-siw/crc/65000 kind=lossy-siw-siw result=PASS note=n CLIENT_MS=48210
	lossy_notes "$TMP/ctl"
	echo "$result|$LOSSY_ROW"
	name=lossy-iwarp-client-tap/crc/65000 kind=lossy-iwarp-client-tap result=PASS note=n CLIENT_MS=24105
	lossy_notes "$TMP/tap"
	echo "$result|$LOSSY_ROW"
	echo "$note"
	result=PASS note=n
	lossy_notes "$TMP/bare"
	echo "$result|$note"
)
expect_eq "lossy notes: the control" "$(echo "$lossy_out" | sed -n 1p)" \
	"PASS|lossy-siw-siw/crc/65000|PASS|48.2|1.00|-|32/1518|0/0.00|-|no iWARP connection decoded|"
expect_eq "lossy notes: a case against the control" "$(echo "$lossy_out" | sed -n 2p)" \
	"PASS|lossy-iwarp-client-tap/crc/65000|PASS|24.1|0.50|lossy-siw-siw|32/1518|0/0.00|-|c>s 8 retransmitted 0 out of order, s>c 59 retransmitted 139 out of order|retransmitted 5 segments (7300 bytes), 2 fast recoveries, 1 timeouts, 3 tail loss probes, 0 spurious"
expect_eq "lossy notes: the note says it" "$(echo "$lossy_out" | sed -n 3p | grep -c "client wall time 24.1 s, 0.50 x lossy-siw-siw; .*our TCP: retransmitted 5 segments")" 1
expect_eq "lossy notes: a guest without netem fails the case" "$(echo "$lossy_out" | sed -n 4p | grep -o '^FAIL|n; netem not applied as asked')" \
	"FAIL|n; netem not applied as asked"

# --- every tool the harness calls comes from a package .ci/run installs first
listed=" $(listed_commands | tr '\n' ' ') "
for t in $SELFTEST_TOOLS $RUN_TOOLS $SETUP_TOOLS $GUEST_TOOLS $NETEM_TOOLS; do
	case "$listed" in
	*" $t "*) ok "$t is in .ci/packages" ;;
	*) not_ok "$t is called by the harness but no package in .ci/packages lists it" ;;
	esac
done

# --- capture checks against the reference captures -------------------------
# check_expect NAME PCAP VARIANT EXPECT COUNT SIZE WANT(0 = clean, 1 = problems)
check_expect() {
	local name=$1 pcap=$2 rc=0 out
	cp "$pcap" "$TMP/$(basename "$pcap")"
	out=$(check_capture "$TMP/$(basename "$pcap")" "$3" "$4" "$5" "$6") || rc=1
	rc=$((rc != 0))
	if [ "$rc" = "$7" ]; then
		ok "$name"
	else
		not_ok "$name: ${out:-no problem found}"
	fi
}

if [ ! -d "$CAPTURES" ]; then
	echo "skip capture checks: no reference captures at $CAPTURES"
	skipped=$((skipped + 1))
elif [ -n "$absent_tools" ]; then
	echo "skip capture checks: missing$absent_tools (.ci/install-packages installs them)"
	skipped=$((skipped + 1))
else
	C=$CAPTURES
	# Each capture is clean as the build that made it...
	check_expect "rping-default as default" "$C/rping-default.pcap" default pass 3 64 0
	check_expect "rping-crc as crc" "$C/rping-crc.pcap" crc pass 3 64 0
	check_expect "rping-cxgb as cxgb" "$C/rping-cxgb.pcap" cxgb pass 3 64 0
	check_expect "rping-crc-8k as crc" "$C/rping-crc-8k.pcap" crc pass 2 8000 0
	check_expect "rping-mpav1 as rev1, expected to fail" "$C/rping-mpav1.pcap" rev1 fail 3 64 0
	check_expect "perftest-send-cxgb policy as cxgb" "$C/perftest-send-cxgb.pcap" cxgb fail "" "" 0
	check_expect "perftest-write-crc policy as crc" "$C/perftest-write-crc.pcap" crc fail "" "" 0
	check_expect "perftest-read policy as default" "$C/perftest-read.pcap" default fail "" "" 0
	# ...and shows problems as any other build.
	for v in crc cxgb rev1; do
		check_expect "rping-default is not $v" "$C/rping-default.pcap" "$v" pass 3 64 1
	done
	for v in default cxgb rev1; do
		check_expect "rping-crc is not $v" "$C/rping-crc.pcap" "$v" pass 3 64 1
	done
	for v in default crc rev1; do
		check_expect "rping-cxgb is not $v" "$C/rping-cxgb.pcap" "$v" pass 3 64 1
	done
	for v in default crc cxgb; do
		check_expect "rping-mpav1 is not $v" "$C/rping-mpav1.pcap" "$v" fail 3 64 1
	done
	# The iteration count and size are read off the wire.
	check_expect "rping-default is not -C 4" "$C/rping-default.pcap" default pass 4 64 1
	check_expect "rping-default is not -C 2" "$C/rping-default.pcap" default pass 2 64 1
	check_expect "rping-default is not -S 65" "$C/rping-default.pcap" default pass 3 65 1
	check_expect "rping-crc-8k is not -S 4000" "$C/rping-crc-8k.pcap" crc pass 2 4000 1
	# A TERMINATE and a short run fail an expected pass.
	check_expect "rping-mismatch-crc is no clean run" "$C/rping-mismatch-crc.pcap" crc pass 1 64 1
	check_expect "rping-mismatch-crc policy is crc" "$C/rping-mismatch-crc.pcap" crc fail 1 64 0
	expect_eq "rping-mismatch-crc has one TERMINATE" \
		"$(rdmap_message_counts "$C/rping-mismatch-crc.pcap" | cut -d' ' -f4)" 1

	# One flipped bit in one FPDU's CRC must show up as Bad CRC32: convert
	# to classic pcap, find the first CRC-checked FPDU frame (its last four
	# bytes are the CRC), flip the frame's last byte.
	editcap -F pcap "$C/rping-crc.pcap" "$TMP/bad-crc.pcap" 2>/dev/null
	target=$(tshark -r "$TMP/bad-crc.pcap" "${TSHARK_OPTS[@]}" -Y 'iwarp_mpa.crc_check && iwarp_ddp' \
		-T fields -e frame.number 2>/dev/null | head -n 1)
	offset=$(tshark -r "$TMP/bad-crc.pcap" -T fields -e frame.number -e frame.cap_len 2>/dev/null |
		awk -v t="$target" 'BEGIN { off = 24 } { off += 16 + $2; if ($1 == t) { print off - 1; exit } }')
	if [ -n "$target" ] && [ -n "$offset" ]; then
		byte=$(od -An -tu1 -j "$offset" -N 1 "$TMP/bad-crc.pcap" | tr -d ' ')
		# shellcheck disable=SC2059 # the format is the one octal escape
		printf "$(printf '\\%03o' $((byte ^ 1)))" |
			dd of="$TMP/bad-crc.pcap" bs=1 seek="$offset" conv=notrunc status=none
		if out=$(check_capture "$TMP/bad-crc.pcap" crc pass 3 64); then
			not_ok "corrupted CRC detected: no problem found"
		elif echo "$out" | grep -q 'Bad CRC32'; then
			ok "corrupted CRC detected"
		else
			not_ok "corrupted CRC detected: $out"
		fi
	else
		not_ok "corrupted CRC detected: no CRC-checked FPDU in rping-crc.pcap"
	fi

	# A guest that stops transmitting: in the reference captures both ends
	# close their connections, so no end went silent; with 10.99.0.2's
	# frames cut after 0.3 s, it did (10.99.0.3 goes on for 1.5 s), and
	# cut after 1.7 s it did not (10.99.0.3 ends 0.1 s later).
	for f in "$C"/*.pcap; do
		for g in 10.99.0.2 10.99.0.3; do
			expect_eq "$g not silent in $(basename "$f")" \
				"$(SIW_SERVER_IP=$g SIW_CLIENT_IP=none guest_went_silent "$f")" ""
		done
	done
	for cut in 0.3 1.7; do
		tshark -r "$C/perftest-write-crc.pcap" -w "$TMP/silent-$cut.pcap" \
			-Y "!(ip.src == 10.99.0.2 && frame.time_relative > $cut)" 2>/dev/null
	done
	silent=$(SIW_SERVER_IP=10.99.0.2 SIW_CLIENT_IP=none guest_went_silent "$TMP/silent-0.3.pcap")
	case "$silent" in
	"siw guest 10.99.0.2 sent nothing after "*" frames reached it on open connections over the next 1."*) ok "guest silent after 0.3 s" ;;
	*) not_ok "guest silent after 0.3 s: got '$silent'" ;;
	esac
	expect_eq "guest not silent for a second" \
		"$(SIW_SERVER_IP=10.99.0.2 SIW_CLIENT_IP=none guest_went_silent "$TMP/silent-1.7.pcap")" ""
fi

echo "selftest: $passed passed, $failed failed, $skipped skipped"
if [ "$skipped" != 0 ] && [ "${IWARP_REQUIRE_ALL:-0}" = 1 ]; then
	echo "FAIL IWARP_REQUIRE_ALL=1 and $skipped group(s) skipped"
	exit 1
fi
[ "$failed" = 0 ]
