# What a lossy case's capture shows about loss recovery; sourced.
# shellcheck shell=bash
#
# The capture is taken on the bridge, after the guest's netem: a frame netem
# dropped never shows, and its resend fills a hole (iwarp decode counts it
# out of order); a resend of a frame that did show is counted retransmitted.
# rping is a ping-pong, one operation at a time, so a quiet spell on its
# connection is a sender waiting: one of at least the transports' minimum
# RTO against real peers (200 ms) is a retransmission timeout (or, rarely, a
# TCG guest that was not scheduled).

# Quiet spells that count as a timeout, in seconds.
LOSSY_STALL_SECS=0.2

# capture_stalls PCAP PORT: the quiet spells of at least LOSSY_STALL_SECS
# between consecutive frames of the TCP connection(s) on PORT, as
# "COUNT TOTAL_S LONGEST_S ENDED_BY", ENDED_BY listing the addresses that
# sent the frame ending a spell, in order of first appearance, with their
# counts ("10.99.0.4:3,10.99.0.2:1", or "-").
capture_stalls() {
	tshark -r "$1" -Y "tcp.port == $2" -T fields -e frame.time_epoch -e ip.src 2>/dev/null |
		stalls_from_times
}

# stalls_from_times: the same from "EPOCH_SECONDS SOURCE" lines on stdin.
stalls_from_times() {
	awk -v min="$LOSSY_STALL_SECS" '
		NF >= 2 {
			if (seen) {
				gap = $1 - last
				if (gap >= min) {
					n++; total += gap; if (gap > longest) longest = gap
					if (!($2 in by)) order[++senders] = $2
					by[$2]++
				}
			}
			last = $1; seen = 1
		}
		END {
			list = ""
			for (i = 1; i <= senders; i++) list = list (list == "" ? "" : ",") order[i] ":" by[order[i]]
			printf "%d %.2f %.2f %s\n", n, total, longest, (list == "" ? "-" : list)
		}'
}

# decode_tcp_counts DECODE_TXT: from `iwarp decode`'s summary, per direction
# of the first iWARP connection, "DIR RETRANSMITTED OUT_OF_ORDER CRC_BAD"
# lines (DIR c>s or s>c).
decode_tcp_counts() {
	awk '
		/^connection #/ { if (done) exit; inconn = ($0 ~ /iWARP/); next }
		inconn && /^  (c>s|s>c) / {
			r = 0; o = 0; b = 0
			if (match($0, /[0-9]+ retransmitted/)) r = substr($0, RSTART, RLENGTH) + 0
			if (match($0, /[0-9]+ out of order/)) o = substr($0, RSTART, RLENGTH) + 0
			if (match($0, /CRC good [0-9]+ bad [0-9]+/)) {
				s = substr($0, RSTART, RLENGTH); sub(/.* bad /, "", s); b = s + 0
			}
			print $1, r, o, b
			done = 1
		}' "$1"
}

# lossy_tcp_note DECODE_TXT: decode_tcp_counts as one short note.
lossy_tcp_note() {
	decode_tcp_counts "$1" | awk '
		{ s = s (s == "" ? "" : ", ") $1 " " $2 " retransmitted " $3 " out of order" }
		END { print (s == "" ? "no iWARP connection decoded" : s) }'
}

# A lossy case's figures, added to its note and kept in LOSSY_ROW: the netem
# parameters its guest reported applying and what netem dropped, the
# client's wall time and its ratio to the control's of this run, the TCP
# resends and quiet spells in the capture. A missing file (a guest that
# never started, a case without our tool) leaves its figure out; it must
# not end the run (set -e, pipefail).
# Reads the case's globals as run.sh's run_one leaves them: name, kind,
# result, note, CLIENT_MS, NETEM_SERVER.
declare -A LOSSY_CONTROL_MS=()
LOSSY_ROWS=()
LOSSY_ROW=
lossy_notes() {
	local dir=$1 netem_log applied drops control control_ms ratio secs stalls tcp tshark_bad ours
	[ -n "$NETEM_SERVER" ] && netem_log=$dir/server.log || netem_log=$dir/client.log
	applied=$(guest_netem "$netem_log" 2>/dev/null || true)
	if [ "$applied" != "$LOSSY_NETEM" ]; then
		note+="; netem not applied as asked ('${applied}')"
		case "$result" in PASS | XFAIL) result=FAIL ;; esac
	fi
	drops=$(guest_netem_drops "$netem_log" 2>/dev/null || true)
	[ -n "$drops" ] || drops="? ?"
	control=$(lossy_control "$kind")
	if [ -z "$control" ]; then
		[ "$result" != PASS ] || [ -z "$CLIENT_MS" ] || LOSSY_CONTROL_MS[$kind]=$CLIENT_MS
		control_ms=$CLIENT_MS
	else
		control_ms=${LOSSY_CONTROL_MS[$control]:-}
	fi
	ratio=$(lossy_ratio "$CLIENT_MS" "$control_ms")
	secs=-
	[ -z "$CLIENT_MS" ] || secs=$(awk -v ms="$CLIENT_MS" 'BEGIN { printf "%.1f", ms / 1000 }')
	read -r -a stalls <<<"$(capture_stalls "$dir/case.pcap" "$RPING_PORT")"
	tcp=$(lossy_tcp_note "$dir/case.pcap.decode.txt" 2>/dev/null || true)
	note+="; netem '$applied' in the $(lossy_netem_guest "$kind") guest, dropped ${drops#* } of ${drops%% *} sent"
	note+="; client wall time ${secs} s, ${ratio} x ${control:-itself}"
	note+="; stalls >= ${LOSSY_STALL_SECS} s: ${stalls[0]:-?} (${stalls[1]:-?} s, longest ${stalls[2]:-?} s, ended by ${stalls[3]:-?}); $tcp"
	tshark_bad=$(grep -c 'Bad CRC32' "$dir/case.pcap.txt" 2>/dev/null || true)
	[ "${tshark_bad:-0}" = 0 ] || note+="; tshark lost FPDU sync: ${tshark_bad} Bad CRC32 by its count (iwarp decode checks every CRC)"
	ours=
	[ ! -f "$dir/iwarp.log" ] || ours=$(sed -n 's/^tcp: //p' "$dir/iwarp.log" | tail -n 1)
	[ -z "$ours" ] || note+="; our TCP: $ours"
	LOSSY_ROW="$name|$result|$secs|$ratio|${control:--}|${drops#* }/${drops%% *}|${stalls[0]:-?}/${stalls[1]:-?}|${stalls[3]:-?}|$tcp|$ours"
}

# lossy_table: the lossy cases' figures, after run.sh's summary.
lossy_table() {
	local r name result secs ratio control drops stalls by tcp ours
	[ "${#LOSSY_ROWS[@]}" -gt 0 ] || return 0
	echo
	echo "lossy link: tc qdisc add dev eth0 root netem $LOSSY_NETEM; rping -C $LOSSY_COUNT -S $LOSSY_SIZE -V, siw build $LOSSY_VARIANT"
	echo "  (client wall time, ratio to the siw-to-siw control of this run with netem on the same side;"
	echo "   netem dropped/sent; stalls >= ${LOSSY_STALL_SECS} s on the connection: count/total s, who ended them)"
	printf '%-44s %-6s %8s %6s %-27s %-11s %-10s %s\n' CASE RESULT CLIENT-S RATIO CONTROL DROPPED STALLS ENDED-BY
	for r in "${LOSSY_ROWS[@]}"; do
		IFS='|' read -r name result secs ratio control drops stalls by tcp ours <<<"$r"
		printf '%-44s %-6s %8s %6s %-27s %-11s %-10s %s\n' "$name" "$result" "$secs" "$ratio" "$control" "$drops" "$stalls" "$by"
		printf '%-44s %s\n' "" "tcp in the capture: $tcp"
		[ -z "$ours" ] || printf '%-44s %s\n' "" "our TCP: $ours"
	done
}
