# The interop case list and what each case is expected to do; sourced.
# shellcheck shell=bash
#
# A case is one line: NAME KIND VARIANT SIZE COUNT EXPECT
#   KIND     siw-siw            two siw guests, rdma-core rping both ends
#            iwarp-client-kernel  our `iwarp rping -c` over kernel TCP vs a siw server guest
#            iwarp-client-tap     the same over smoltcp on a TAP
#            iwarp-server-kernel  our `iwarp rping -s` over kernel TCP vs a siw client guest
#            iwarp-server-tap     the same over smoltcp on a TAP
#   VARIANT  the siw build (lib.sh: default, crc, cxgb, rev1)
#   SIZE     rping -S;  COUNT  rping -C
#   EXPECT   pass, or fail: a known-unsupported combination that must fail
#            cleanly (both ends exit by themselves, no hang); its passing is
#            reported as XPASS and fails the run, so the list stays true.
#
# perftest cases (IWARP_INTEROP_PERFTEST=0 leaves them out; `perftest-*`
# patterns select them) use the same line, with the perftest test in COUNT:
#   KIND     perftest-siw-siw       ib_*_bw/ib_*_lat -R between two siw guests
#            perftest-iwarp-server  a siw guest's ib_* client against
#                                   `iwarp perf` serving over kernel TCP
#            perftest-iwarp-client  `iwarp perf HOST` against a siw guest's
#                                   ib_* server
#   SIZE     -s;  COUNT  write, read, send, write_lat, read_lat, send_lat
#   every run is `-R -D 2` on the default siw build.
#
# Debian's own programs over the C ABI library (rdma-shim: libibverbs.so.1
# and librdmacm.so.1 from target/release/rdma-shim, or IWARP_SHIM_DIR), on
# the host over kernel TCP, against siw guests; the default siw build,
# -S 65000 -C 100:
#   KIND     shim-client-print   rping -c -v over the shim vs a siw server guest
#            shim-client-verify  the same with -V
#            shim-server-print   rping -s -v over the shim vs a siw client guest
#            shim-server-verify  the same with -V
#            perftest-shim-server  a siw guest's ib_* client against ib_*
#                                  serving over the shim (perftest cases, as
#                                  perftest-iwarp-server)
#            perftest-shim-client  ib_* HOST over the shim against a siw
#                                  guest's ib_* server
#
# One hostile case, in the default matrix: `iwarp fuzz-peer` sends RFC 7306
# messages (Immediate Data, an Atomic Request) to a siw server guest's
# `rping -s -P`, which did not agree to RFC 7306 (siw does not implement
# it), and expects a TERMINATE for each (remote operation error, unexpected
# opcode, 0/2/0x06). SIZE and COUNT are unused (0):
#   KIND     fuzz-rfc7306   the two catalogue cases against the default build
#
# Lossy cases, opt-in (IWARP_INTEROP_LOSSY=1 adds them, as run-lossy.sh
# does; together they take 10-12 minutes, more than the rest of the matrix
# should grow by): netem in one siw guest, `rping -C 1000 -S 65000 -V` on
# the crc build (so every FPDU's CRC is checked across the lossy path):
#   KIND     lossy-siw-siw               two siw guests, netem in the server
#                                        guest: the control of lossy-iwarp-client-*
#            lossy-siw-siw-netem-client  the same with netem in the client
#                                        guest: the control of lossy-iwarp-server-*
#            lossy-iwarp-client-tap      our client on TAP vs a siw server guest
#            lossy-iwarp-client-kernel   our client over kernel TCP, the same
#            lossy-iwarp-server-tap      our server on TAP vs a siw client guest
#   Each prints the client's wall time and its ratio to its control's in
#   the same run (a figure, not a pass/fail).

INTEROP_SIZES="64 4000 65000"
SIW_SIW_COUNT=10
IWARP_COUNT=100
IWARP_KINDS="iwarp-client-kernel iwarp-client-tap iwarp-server-kernel iwarp-server-tap"
PERFTEST_KINDS="perftest-siw-siw perftest-iwarp-server perftest-iwarp-client perftest-shim-server perftest-shim-client"
SHIM_KINDS="shim-client-print shim-client-verify shim-server-print shim-server-verify"
SHIM_SIZE=65000
SHIM_COUNT=100
PERFTEST_TESTS="write read send write_lat read_lat send_lat"
PERFTEST_BW_SIZES="4096 65536"
PERFTEST_LAT_SIZES="2 4096"
PERFTEST_SECS=2
LOSSY_NETEM="loss 2% delay 1ms reorder 5%"
LOSSY_KINDS="lossy-siw-siw lossy-iwarp-client-tap lossy-iwarp-client-kernel lossy-siw-siw-netem-client lossy-iwarp-server-tap"
LOSSY_VARIANT=crc
LOSSY_SIZE=65000
LOSSY_COUNT=${IWARP_INTEROP_LOSSY_COUNT:-1000}

# known_unsupported KIND VARIANT: why that combination cannot work, or
# nothing when it is expected to.
known_unsupported() {
	case "$1/$2" in
	siw-siw/rev1)
		echo "siw's own rping cannot run over MPA rev 1: a rev-1 request carries no IRD/ORD words, so siw reports 0/0 in the connect request; rping accepts with no parameters, librdmacm then takes the request's values, the server QP comes up with ORD 0 and its first RDMA READ is refused (siw: siw_activate_tx_from_sq: error -22; rping: post send error), so the server closes after the client's first SEND"
		;;
	iwarp-client-*/rev1)
		echo "the siw server's rping must RDMA READ from us, and siw accepts a rev-1 connection with ORD 0 (no IRD/ORD in rev 1), so its first READ is refused as in siw-siw/rev1"
		;;
	esac
}

# The iwarp tool's flags that match a siw build's MPA policy. `--crc` asks
# for CRC (siw's CRC builds insist on it); `--p2p all` offers (connecting)
# or accepts (listening) every ready-to-receive kind, and siw, responding,
# picks a zero-length WRITE, the kind it sends itself when it connects.
iwarp_policy_flags() {
	case "$1" in
	default) echo "" ;;
	crc) echo "--crc" ;;
	cxgb) echo "--crc --p2p all" ;;
	rev1) echo "--mpa-rev 1 --crc" ;;
	esac
}

interop_cases() {
	local v s kind expect
	for v in $SIW_VARIANTS; do
		for s in $INTEROP_SIZES; do
			expect=pass
			[ -z "$(known_unsupported siw-siw "$v")" ] || expect=fail
			echo "siw-siw/$v/$s siw-siw $v $s $SIW_SIW_COUNT $expect"
		done
	done
	for kind in $IWARP_KINDS; do
		for v in $SIW_VARIANTS; do
			for s in $INTEROP_SIZES; do
				expect=pass
				[ -z "$(known_unsupported "$kind" "$v")" ] || expect=fail
				echo "$kind/$v/$s $kind $v $s $IWARP_COUNT $expect"
			done
		done
	done
	for kind in $SHIM_KINDS; do
		echo "$kind/default/$SHIM_SIZE $kind default $SHIM_SIZE $SHIM_COUNT pass"
	done
	echo "fuzz-rfc7306/default fuzz-rfc7306 default 0 0 pass"
	perftest_cases
	lossy_cases
}

# The fuzz-peer cases of the fuzz-rfc7306 kind.
FUZZ_RFC7306_CASES="immediate-data-not-agreed,atomic-request-not-agreed"

# The lossy cases, each control before the cases measured against it.
lossy_cases() {
	local kind
	[ "${IWARP_INTEROP_LOSSY:-0}" = 1 ] || return 0
	for kind in $LOSSY_KINDS; do
		echo "$kind/$LOSSY_VARIANT/$LOSSY_SIZE $kind $LOSSY_VARIANT $LOSSY_SIZE $LOSSY_COUNT pass"
	done
}

# lossy_netem_guest KIND: which siw guest (server or client) runs netem:
# the one our tool talks to, or for a control the one its cases have.
lossy_netem_guest() {
	case "$1" in
	lossy-siw-siw | lossy-iwarp-client-*) echo server ;;
	lossy-siw-siw-netem-client | lossy-iwarp-server-*) echo client ;;
	*) return 1 ;;
	esac
}

# lossy_control KIND: the siw-to-siw case a lossy case is compared with
# (nothing for a control itself).
lossy_control() {
	case "$1" in
	lossy-iwarp-client-*) echo lossy-siw-siw ;;
	lossy-iwarp-server-*) echo lossy-siw-siw-netem-client ;;
	esac
}

# lossy_ratio MS CONTROL_MS: MS / CONTROL_MS with two decimals, or "-"
# without a control time.
lossy_ratio() {
	if [ -z "$2" ] || [ "$2" = 0 ] || [ -z "$1" ]; then
		echo -
		return
	fi
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a / b }'
}

# The perftest cases: every test at a couple of sizes, in each role.
perftest_cases() {
	local kind t s sizes
	[ "${IWARP_INTEROP_PERFTEST:-1}" = 1 ] || return 0
	for kind in $PERFTEST_KINDS; do
		for t in $PERFTEST_TESTS; do
			case "$t" in *_lat) sizes=$PERFTEST_LAT_SIZES ;; *) sizes=$PERFTEST_BW_SIZES ;; esac
			# IWARP_INTEROP_PERFTEST_SIZES=quick keeps the last size of each
			# test (65536 for bandwidth, 4096 for latency): 18 cases, not 36.
			[ "${IWARP_INTEROP_PERFTEST_SIZES:-all}" != quick ] || sizes=${sizes##* }
			for s in $sizes; do
				echo "$kind/$t/$s $kind default $s $t pass"
			done
		done
	done
}

# perftest_program TEST: the perftest binary that runs it.
perftest_program() {
	case "$1" in
	*_lat) echo "ib_$1" ;;
	*) echo "ib_$1_bw" ;;
	esac
}

# perftest_iwarp_op TEST: the `iwarp perf` test of the same name.
perftest_iwarp_op() { echo "${1//_/-}"; }

# shim_rping_flag KIND: rping's data flag of a shim case: -v prints each
# ping, -V verifies it.
shim_rping_flag() {
	case "$1" in
	*-print) echo -v ;;
	*) echo -V ;;
	esac
}
