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
