# Checks on one case's capture; sourced.
# shellcheck shell=bash
#
# check_capture PCAP VARIANT EXPECT [COUNT SIZE]
# Prints one line per problem and returns non-zero when there is any:
#   - tshark's iwarp_mpa/iwarp_ddp_rdmap dissectors find no malformed frame
#     and no "Bad CRC32" (rpcordma disabled so SEND payloads are not misread);
#   - the MPA request/reply show the siw build's policy: the revision
#     (1 for rev1, else 2), the CRC flag (set by crc, cxgb, rev1; clear for
#     default, where tshark must then check no CRC at all), and the
#     peer-to-peer bit of the enhanced IRD/ORD words (cxgb only) — this is
#     what proves the variant module really took its constants;
#   - with CRC on and any FPDU sent, tshark verified at least one "Good CRC32";
#   - for a case expected to pass, the wire shows COUNT rping iterations of
#     SIZE bytes and no TERMINATE;
#   - `iwarp decode PCAP` exits 0 when the iwarp tool has that subcommand;
#     its per-message counts are the ones checked against rping's.
# A case expected to fail still gets every check that its partial traffic
# allows (no malformed frames, no bad CRC, the right MPA policy).
#
# TSHARK_CRC_ADVISORY=1 (the lossy cases) leaves tshark's Bad CRC32 count
# out of the verdict when `iwarp decode` is there to check every CRC (it
# fails on a bad one); so does any capture in which tshark sees TCP
# retransmissions (a note is printed instead). After netem's losses and reorders the resends that
# fill holes cut the stream differently, and tshark's MPA dissector, which
# reassembles from where it believes an FPDU starts, can lose FPDU sync and
# check a CRC over the wrong bytes: seen once in 1000 pings of 65000 bytes,
# on siw's own direction, where iwarp decode (which reassembles each
# direction by sequence number) verified all 49000 CRCs.

TSHARK_OPTS=(--disable-protocol rpcordma)

variant_rev() { [ "$1" = rev1 ] && echo 1 || echo 2; }
variant_crc() { [ "$1" = default ] && echo 0 || echo 1; }
variant_p2p() { [ "$1" = cxgb ] && echo 1 || echo 0; }

# The MPA headers of one direction: lines "REV CRCFLAG PRIVATEDATA".
mpa_headers() {
	tshark -r "$1" "${TSHARK_OPTS[@]}" -Y "$2" -T fields \
		-e iwarp_mpa.rev -e iwarp_mpa.crc_flag -e iwarp_mpa.privatedata 2>/dev/null
}

# Whether the enhanced IRD word (first 16 bits of private data, hex) carries
# the peer-to-peer bit 0x8000.
p2p_bit() {
	local pd=$1
	[ ${#pd} -ge 4 ] || {
		echo 0
		return
	}
	echo $(((16#${pd:0:4} & 0x8000) != 0))
}

# rping's messages on the wire, as "READS SIZES SENDS TERMINATES": READ
# requests with a non-zero size, the distinct sizes they asked for, SENDs
# that ended a message, TERMINATEs. Counted by `iwarp decode`, which
# reassembles each TCP direction and so finds every FPDU; tshark's MPA
# dissector looks for FPDUs at segment starts only and misses those that
# share or straddle segments (legal in MPA: the stream is bytes).
rdmap_message_counts() {
	if iwarp_has_subcommand decode; then
		"$(iwarp_bin)" decode --json "$1" 2>/dev/null | python3 -c '
import json, sys
reads = sends = terms = 0
sizes = set()
for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("type") != "fpdu":
        continue
    op = e.get("opcode", "")
    if op == "read_req" and e.get("read_request", {}).get("size", 0) > 0:
        reads += 1
        sizes.add(e["read_request"]["size"])
    elif op.startswith("send") and e.get("last"):
        sends += 1
    elif op == "terminate":
        terms += 1
print(reads, ",".join(str(s) for s in sorted(sizes)) or "-", sends, terms)
'
		return
	fi
	rdmap_message_counts_tshark "$1"
}

# The same counts from tshark, for a tool without `decode`. A frame can
# carry several FPDUs; tshark joins each field's values with commas, in FPDU
# order.
rdmap_message_counts_tshark() {
	tshark -r "$1" "${TSHARK_OPTS[@]}" -Y iwarp_ddp -T fields \
		-e iwarp_rdma.opcode -e iwarp_ddp.last_flag -e iwarp_rdma.rdmardsz 2>/dev/null |
		awk -F'\t' '
		{
			n = split($1, op, ","); split($2, last, ","); m = split($3, sz, ",")
			for (i = 1; i <= n; i++) {
				o = op[i]; sub(/^0x0*/, "", o)   # "0x03" -> "3" (opcodes are 0..15)
				if ((o == "3" || o == "5") && (last[i] == "1" || last[i] == "True")) sends++
				if (o == "7") terms++
			}
			for (i = 1; i <= m; i++) if (sz[i] + 0 > 0) { reads++; sizes[sz[i] + 0] = 1 }
		}
		END {
			list = ""
			for (k in sizes) list = list (list == "" ? "" : ",") k
			printf "%d %s %d %d\n", reads, (list == "" ? "-" : list), sends, terms
		}'
}

# tcp_retransmissions PCAP: how many TCP segments tshark takes for resends.
tcp_retransmissions() {
	tshark -r "$1" -Y 'tcp.analysis.retransmission || tcp.analysis.fast_retransmission' \
		-T fields -e frame.number 2>/dev/null | wc -l
}

check_capture() {
	local pcap=$1 variant=$2 expect=$3 count=${4:-} size=${5:-} problems=0 text req rep rev crc pd
	local good bad malformed fpdus reads sizes sends terms
	problem() {
		echo "capture: $*"
		problems=$((problems + 1))
	}
	if [ ! -s "$pcap" ]; then
		problem "empty or missing $pcap"
		return 1
	fi
	text=$pcap.txt
	if ! tshark -r "$pcap" "${TSHARK_OPTS[@]}" -V >"$text" 2>"$pcap.tshark.err"; then
		problem "tshark could not read it: $(head -n 1 "$pcap.tshark.err")"
	fi
	good=$(grep -c 'Good CRC32' "$text" || true)
	bad=$(grep -c 'Bad CRC32' "$text" || true)
	malformed=$(grep -c 'Malformed Packet' "$text" || true)
	fpdus=$(tshark -r "$pcap" "${TSHARK_OPTS[@]}" -Y iwarp_mpa.fpdu -T fields -e frame.number 2>/dev/null | wc -l)
	if [ "$bad" != 0 ] && iwarp_has_subcommand decode; then
		if [ "${TSHARK_CRC_ADVISORY:-0}" = 1 ]; then
			:
		elif [ "$(tcp_retransmissions "$pcap")" -gt 0 ]; then
			# A resend that cuts the stream elsewhere than the first
			# send did throws tshark off FPDU sync; iwarp decode
			# (below) checks every CRC by sequence number instead.
			echo "capture: note: tshark counted $bad Bad CRC32 after $(tcp_retransmissions "$pcap") TCP retransmissions; left to iwarp decode"
		else
			problem "$bad FPDUs with Bad CRC32"
		fi
	else
		[ "$bad" = 0 ] || problem "$bad FPDUs with Bad CRC32"
	fi
	[ "$malformed" = 0 ] || problem "$malformed malformed frames"

	req=$(mpa_headers "$pcap" iwarp_mpa.req | head -n 1)
	rep=$(mpa_headers "$pcap" iwarp_mpa.rep | head -n 1)
	if [ -z "$req" ]; then
		[ "$expect" = fail ] || problem "no MPA request on the wire"
	else
		read -r rev crc pd <<<"$req"
		[ "$rev" = "$(variant_rev "$variant")" ] || problem "MPA request has rev $rev, $variant wants $(variant_rev "$variant")"
		if [ "$(variant_p2p "$variant")" = 1 ]; then
			[ "$(p2p_bit "$pd")" = 1 ] || problem "MPA request lacks the peer-to-peer bit ($pd)"
		elif [ "$rev" = 2 ]; then
			[ "$(p2p_bit "$pd")" = 0 ] || problem "MPA request sets peer-to-peer, $variant does not"
		fi
		if [ "$(variant_crc "$variant")" = 0 ]; then
			[ "$crc" = 0 ] || problem "MPA request asks for CRC, $variant does not"
		fi
	fi
	if [ -z "$rep" ]; then
		[ "$expect" = fail ] || problem "no MPA reply on the wire"
	else
		read -r rev crc pd <<<"$rep"
		[ "$rev" = "$(variant_rev "$variant")" ] || problem "MPA reply has rev $rev, $variant wants $(variant_rev "$variant")"
		if [ "$(variant_crc "$variant")" = 1 ]; then
			[ "$crc" = 1 ] || problem "MPA reply does not set CRC, $variant requires it"
			[ "$fpdus" = 0 ] || [ "$good" -gt 0 ] || problem "CRC negotiated but tshark verified no Good CRC32"
		else
			[ "$crc" = 0 ] || problem "MPA reply sets CRC, $variant does not"
			[ "$good" = 0 ] || problem "CRC checked on a connection that negotiated none"
		fi
		if [ "$(variant_p2p "$variant")" = 1 ]; then
			[ "$(p2p_bit "$pd")" = 1 ] || problem "MPA reply lacks the peer-to-peer bit ($pd)"
		fi
	fi
	if [ "$expect" = pass ] && [ "$fpdus" = 0 ]; then
		problem "no FPDU on the wire"
	fi
	# rping's exit status does not prove the pings happened (its client exits
	# 0 when the server drops the connection early), so count them on the
	# wire: per iteration one RDMA READ of SIZE bytes and four SENDs.
	if [ "$expect" = pass ] && [ -n "$count" ]; then
		read -r reads sizes sends terms <<<"$(rdmap_message_counts "$pcap")"
		[ "$reads" = "$count" ] || problem "$reads RDMA READs of data on the wire, rping -C $count makes $count"
		[ "$sizes" = "$size" ] || problem "RDMA READ sizes $sizes, rping -S $size reads $size"
		[ "$sends" = $((4 * count)) ] || problem "$sends SENDs on the wire, rping -C $count makes $((4 * count))"
		[ "$terms" = 0 ] || problem "$terms TERMINATE messages on the wire"
	fi

	if iwarp_has_subcommand decode; then
		if ! "$(iwarp_bin)" decode "$pcap" >"$pcap.decode.txt" 2>&1; then
			problem "iwarp decode failed: $(tail -n 1 "$pcap.decode.txt")"
		fi
	fi
	[ "$problems" = 0 ]
}

# verdict EXPECT SERVER_RC CLIENT_RC: one case's outcome from the two ends'
# exit statuses ("none": that end never reported one; 124: it hit its time
# limit; "killed": it was stopped after its peer had gone) — HANG, PASS, XPASS (a known-unsupported case passed), XFAIL (it
# failed, as expected, by itself) or FAIL. Capture problems turn PASS and
# XFAIL into FAIL afterwards.
verdict() {
	local expect=$1 s=$2 c=$3
	case " $s $c " in *" none "* | *" 124 "* | *" killed "*)
		echo HANG
		return
		;;
	esac
	if [ "$s" = 0 ] && [ "$c" = 0 ]; then
		[ "$expect" = pass ] && echo PASS || echo XPASS
	else
		[ "$expect" = fail ] && echo XFAIL || echo FAIL
	fi
}

# guest_went_silent PCAP: prints a line when a siw guest stopped sending
# for good partway through a case: after its last frame, its peer sent it
# at least 3 more over a second or longer on connections the guest had not
# closed (no FIN, no RST from it). A guest whose program ended, well or
# badly, closes its sockets before it powers off; one that falls silent
# on open connections, while frames keep reaching it, has a network device
# that stopped transmitting (seen now and then with qemu under TCG on a
# loaded host: the guest goes on receiving, its programs run to the end,
# and nothing it sends leaves the machine). Prints nothing otherwise.
guest_went_silent() {
	tcpdump -nn -tt -r "$1" ip 2>/dev/null | awk -v guests="$SIW_SERVER_IP $SIW_CLIENT_IP" '
	function host(a) { sub(/:$/, "", a); sub(/\.[0-9]+$/, "", a); return a }
	function ends(a) { sub(/:$/, "", a); return a }
	BEGIN { n = split(guests, g, " "); for (i = 1; i <= n; i++) guest[g[i]] = 1 }
	NR == 1 { t0 = $1 }
	{
		src = host($3); dst = host($5)
		if (src in guest) {
			last[src] = $1; after[src] = 0
			if ($0 ~ /Flags \[[^]]*[FR]/) closed[ends($3) " " ends($5)] = 1
		} else if ((dst in guest) && (dst in last) && !((ends($5) " " ends($3)) in closed)) {
			after[dst]++; end[dst] = $1
		}
	}
	END {
		for (h in last)
			if (after[h] >= 3 && end[h] - last[h] >= 1)
				printf "siw guest %s sent nothing after %.2f s of the capture, while %d frames reached it on open connections over the next %.1f s: its network device stopped transmitting\n", \
					h, last[h] - t0, after[h], end[h] - last[h]
	}'
}
