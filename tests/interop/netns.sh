# A private network for one harness run; sourced, not run.
# shellcheck shell=bash
# shellcheck disable=SC2034 # addresses used by the scripts that source this
#
# One network namespace, named uniquely per run, holding a bridge that joins
# the qemu guests' TAP devices, the host side's address (for the kernel-TCP
# transport of the iwarp tool) and one spare TAP (for its smoltcp-on-TAP
# transport). Nothing is routed out of the namespace: it has no other
# interface and no default route.
#
#   10.99.0.1/24  the bridge: the iwarp tool over kernel TCP
#   10.99.0.2     siw guest acting as server
#   10.99.0.3     siw guest acting as client
#   10.99.0.4     the iwarp tool over smoltcp, on TAP "iwtap0"
#
# Every process started here is recorded and killed by pid on cleanup.

NET_PREFIX=10.99.0
NET_BITS=24
HOST_IP=$NET_PREFIX.1
SIW_SERVER_IP=$NET_PREFIX.2
SIW_CLIENT_IP=$NET_PREFIX.3
IWARP_TAP_IP=$NET_PREFIX.4
IWARP_TAP=iwtap0
BRIDGE=br0

NETNS=
NETNS_PIDS=()

# Creates the namespace and bridge; installs the cleanup trap.
netns_create() {
	NETNS="iwarp-interop-$$-$RANDOM"
	ip netns add "$NETNS" || die "ip netns add $NETNS failed"
	trap netns_cleanup EXIT
	trap 'exit 130' INT TERM
	nsx sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null
	nsx ip link set lo up
	nsx ip link add "$BRIDGE" type bridge forward_delay 0 stp_state 0
	nsx ip addr add "$HOST_IP/$NET_BITS" dev "$BRIDGE"
	nsx ip link set "$BRIDGE" up
	netns_add_tap "$IWARP_TAP"
	log "namespace $NETNS: bridge $BRIDGE $HOST_IP/$NET_BITS, spare TAP $IWARP_TAP for $IWARP_TAP_IP"
}

# Runs a command inside the namespace (in the foreground: to background one,
# call `ip netns exec` directly so that $! is the command's own pid).
nsx() { ip netns exec "$NETNS" "$@"; }

# A persistent TAP device on the bridge, for qemu or the iwarp tool to open.
netns_add_tap() {
	nsx ip tuntap add dev "$1" mode tap || die "cannot create TAP $1"
	nsx ip link set "$1" master "$BRIDGE"
	nsx ip link set "$1" up
}

netns_del_tap() { nsx ip link del "$1" 2>/dev/null || true; }

# Remembers a pid for cleanup, and forgets it once it has been reaped (so
# cleanup never signals a pid the system may have handed to someone else).
netns_track_pid() { NETNS_PIDS+=("$1"); }
netns_untrack_pid() {
	local keep=() pid
	for pid in "${NETNS_PIDS[@]}"; do
		[ "$pid" = "$1" ] || keep+=("$pid")
	done
	NETNS_PIDS=("${keep[@]}")
}

netns_cleanup() {
	local pid
	for pid in "${NETNS_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${NETNS_PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	NETNS_PIDS=()
	if [ -n "$NETNS" ]; then
		ip netns del "$NETNS" 2>/dev/null || true
		NETNS=
	fi
}

# Starts a capture on the bridge into $1; sets CAPTURE_PID. Waits (bounded)
# until tcpdump is listening so the first SYN is not missed.
capture_start() {
	local pcap=$1 errlog=$1.log i
	# Not through nsx: a backgrounded function would leave a subshell between
	# $! and tcpdump, and the signal meant for tcpdump would go to the shell.
	ip netns exec "$NETNS" tcpdump -i "$BRIDGE" -s 0 -B 32768 -U -w "$pcap" >"$errlog" 2>&1 &
	CAPTURE_PID=$!
	netns_track_pid "$CAPTURE_PID"
	for _ in $(seq 1 50); do
		grep -q 'listening on' "$errlog" 2>/dev/null && return 0
		kill -0 "$CAPTURE_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$errlog" >&2
	die "tcpdump did not start on $BRIDGE"
}

# Stops the capture started last and flushes the file.
capture_stop() {
	[ -n "${CAPTURE_PID:-}" ] || return 0
	kill -INT "$CAPTURE_PID" 2>/dev/null || true
	wait "$CAPTURE_PID" 2>/dev/null || true
	netns_untrack_pid "$CAPTURE_PID"
	CAPTURE_PID=
}
