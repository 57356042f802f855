# Checks on one case's capture; sourced.
# shellcheck shell=bash
#
# check_capture PCAP VARIANT EXPECT
# Prints one line per problem and returns non-zero when there is any:
#   - tshark's iwarp_mpa/iwarp_ddp_rdmap dissectors find no malformed frame
#     and no "Bad CRC32" (rpcordma disabled so SEND payloads are not misread);
#   - the MPA request/reply show the siw build's policy: the revision
#     (1 for rev1, else 2), the CRC flag (set by crc, cxgb, rev1; clear for
#     default, where tshark must then check no CRC at all), and the
#     peer-to-peer bit of the enhanced IRD/ORD words (cxgb only) — this is
#     what proves the variant module really took its constants;
#   - with CRC on and any FPDU sent, tshark verified at least one "Good CRC32";
#   - `iwarp decode PCAP` exits 0 when the iwarp tool has that subcommand.
# A case expected to fail still gets every check that its partial traffic
# allows (no malformed frames, no bad CRC, the right MPA policy).

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

check_capture() {
	local pcap=$1 variant=$2 expect=$3 problems=0 text req rep rev crc pd
	local good bad malformed fpdus
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
	[ "$bad" = 0 ] || problem "$bad FPDUs with Bad CRC32"
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

	if iwarp_has_subcommand decode; then
		if ! "$(iwarp_bin)" decode "$pcap" >"$pcap.decode.txt" 2>&1; then
			problem "iwarp decode failed: $(tail -n 1 "$pcap.decode.txt")"
		fi
	fi
	[ "$problems" = 0 ]
}
