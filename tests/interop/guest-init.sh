#!/bin/sh
# /init of the siw peer's initramfs (busybox sh).
#
# Everything the guest does comes from the kernel command line, so one
# initramfs serves every case:
#   iwarp.variant=default|crc|cxgb|rev1   which siw.ko build to load
#   iwarp.ip=A.B.C.D/N                    address of eth0
#   iwarp.cmd=prog,arg,arg                the command, commas for spaces
#   iwarp.timeout=SECONDS                 cap on the command's run time
#   iwarp.wait_for=A.B.C.D                optional: wait until it answers ARP
#   iwarp.wait_settle=SECONDS             and then this long (default 2)
#   iwarp.dmesg_lines=N                   kernel log lines shown at the end
#   iwarp.siw_debug=1                     turn on siw's debug messages
#   iwarp.netem=loss,2%,delay,1ms         optional: netem on eth0's egress,
#                                         its parameters with commas for
#                                         spaces (segmentation offloads go
#                                         off first, so it sees frames)
#
# Markers on the serial console tell the host how far the guest got; the
# host never has to guess from a hang:
#   IWARP-INTEROP-READY                   siw0 exists, the command starts now
#   IWARP-INTEROP-RESULT rc=N             the command ended with status N
#                                         (124: it ran into iwarp.timeout)
#   IWARP-INTEROP-SETUP-FAILED <what>     the guest could not get that far
#   IWARP-INTEROP-NETEM <parameters>      netem is on eth0 with these
#   IWARP-INTEROP-ELAPSED ms=N            the command's wall time
# and then the guest powers off, always.

PATH=/bin:/usr/bin:/sbin:/usr/sbin
export PATH

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1

finish() {
	# Give the serial port a moment to drain before the machine goes away.
	sync
	sleep 1
	poweroff -f
	# poweroff -f does not return; if it ever does, stop here anyway.
	exit 0
}

setup_failed() {
	echo "IWARP-INTEROP-SETUP-FAILED $*"
	dmesg | tail -n 30 | sed 's/^/guest-dmesg: /'
	finish
}

variant=default
ip_cidr=
cmd=
cmd_timeout=100
wait_for=
wait_settle=2
dmesg_lines=20
siw_debug=0
netem=
# shellcheck disable=SC2013 # the command line is words, one line
for word in $(cat /proc/cmdline); do
	case "$word" in
	iwarp.variant=*) variant=${word#iwarp.variant=} ;;
	iwarp.ip=*) ip_cidr=${word#iwarp.ip=} ;;
	iwarp.cmd=*) cmd=${word#iwarp.cmd=} ;;
	iwarp.timeout=*) cmd_timeout=${word#iwarp.timeout=} ;;
	iwarp.wait_for=*) wait_for=${word#iwarp.wait_for=} ;;
	iwarp.wait_settle=*) wait_settle=${word#iwarp.wait_settle=} ;;
	iwarp.dmesg_lines=*) dmesg_lines=${word#iwarp.dmesg_lines=} ;;
	iwarp.siw_debug=*) siw_debug=${word#iwarp.siw_debug=} ;;
	iwarp.netem=*) netem=${word#iwarp.netem=} ;;
	esac
done
cmd=$(echo "$cmd" | tr ',' ' ')
netem=$(echo "$netem" | tr ',' ' ')

# Modules in dependency order, worked out on the host with modprobe
# --show-depends. A module the CPU cannot use (crc32c-intel without SSE4.2)
# fails to load and is not needed: crc32c_generic covers it.
while read -r mod; do
	[ -n "$mod" ] || continue
	if ! insmod "/modules/$mod" 2>/tmp/insmod.err; then
		case "$mod" in
		crc32c-intel.ko) ;;
		*) if ! grep -q 'File exists' /tmp/insmod.err; then
			cat /tmp/insmod.err
			setup_failed "insmod $mod"
		fi ;;
		esac
	fi
done </modules/order

[ -f "/modules/siw-$variant.ko" ] || setup_failed "no siw build named $variant"
insmod "/modules/siw-$variant.ko" || setup_failed "insmod siw-$variant.ko"
if [ "$siw_debug" = 1 ]; then
	mount -t debugfs debugfs /sys/kernel/debug &&
		echo 'module siw +p' >/sys/kernel/debug/dynamic_debug/control ||
		echo "iwarp-interop: could not turn on siw debug messages"
fi

ip link set lo up
[ -n "$ip_cidr" ] || setup_failed "no iwarp.ip= on the command line"
ip link set eth0 up || setup_failed "eth0 missing"
# siw0 first, the address second: a peer that sees this guest answer ARP
# (iwarp.wait_for) knows siw is already attached.
rdma link add siw0 type siw netdev eth0 || setup_failed "rdma link add siw0"
# A lossy link: netem on eth0's egress. netem drops, delays and reorders
# whole packets, and with segmentation offloads on, the guest's TCP hands
# it 64 KB GSO packets: they go off so that the loss rate is per frame.
# iproute2's tc and ethtool by path: /bin's busybox tc has no netem.
if [ -n "$netem" ]; then
	while read -r mod; do
		[ -z "$mod" ] || insmod "/modules/$mod" || setup_failed "insmod $mod"
	done </modules/netem.order
	/usr/sbin/ethtool -K eth0 tso off gso off gro off ||
		setup_failed "ethtool -K eth0 tso off gso off gro off"
	/usr/sbin/ethtool -k eth0 | grep -E '^(tcp|generic)-segmentation-offload|^generic-receive-offload' |
		sed 's/^/iwarp-interop: eth0 /'
	# shellcheck disable=SC2086 # the parameters are split into words on purpose
	/usr/sbin/tc qdisc add dev eth0 root netem $netem ||
		setup_failed "tc qdisc add dev eth0 root netem $netem"
	echo "iwarp-interop: tc qdisc add dev eth0 root netem $netem"
	/usr/sbin/tc qdisc show dev eth0 | sed 's/^/iwarp-interop: /'
	echo "IWARP-INTEROP-NETEM $netem"
fi
ip addr add "$ip_cidr" dev eth0 || setup_failed "ip addr add $ip_cidr"

# Wait for the uverbs and rdma_cm device nodes (devtmpfs creates them
# asynchronously); bounded.
tries=0
while [ ! -e /dev/infiniband/rdma_cm ] || [ ! -e /dev/infiniband/uverbs0 ]; do
	tries=$((tries + 1))
	[ "$tries" -le 50 ] || setup_failed "no /dev/infiniband nodes"
	sleep 0.1
done

# When the client boots while its server is still starting, it waits for
# the server's address to answer ARP (any IPv4 host does, a smoltcp one
# too, which does not answer ping), then gives it a moment to start
# listening; bounded.
if [ -n "$wait_for" ]; then
	tries=0
	until arping -q -c 1 -w 1 -I eth0 "$wait_for" >/dev/null 2>&1; do
		tries=$((tries + 1))
		[ "$tries" -le 90 ] || setup_failed "$wait_for never answered ARP"
		sleep 0.2
	done
	sleep "$wait_settle"
fi

echo "iwarp-interop: siw build $variant, eth0 $ip_cidr, running: $cmd"
echo "IWARP-INTEROP-READY"
[ -n "$cmd" ] || setup_failed "no iwarp.cmd= on the command line"
# Milliseconds since boot, from /proc/uptime ("SECONDS.CC"; SECONDS is
# at least 1 by now, so the digits joined have no leading zero).
uptime_ms() {
	read -r up _ </proc/uptime
	echo $((${up%.*}${up#*.} * 10))
}
started=$(date +%s)
started_ms=$(uptime_ms)
# shellcheck disable=SC2086 # the command is split into words on purpose
timeout "$cmd_timeout" $cmd
rc=$?
echo "IWARP-INTEROP-ELAPSED ms=$(($(uptime_ms) - started_ms))"
elapsed=$(($(date +%s) - started))
# A command that ran into the limit was killed, whatever status timeout
# reported: call it 124, as coreutils does, so the host can tell a hang
# from a clean failure.
if [ "$elapsed" -ge "$cmd_timeout" ]; then
	echo "IWARP-INTEROP-TIMED-OUT after $elapsed s"
	rc=124
fi
# siw and the RDMA core print connection errors to the kernel log; keep the
# ones that explain a failure next to the result.
dmesg | grep -iE 'siw|iw_cm|rdma|infiniband|virtio|eth0|watchdog' | grep -vE 'speed is unknown|NMI watchdog' |
	tail -n "$dmesg_lines" | sed 's/^/guest-dmesg: /'
# What eth0 moved, for a case in which the guest stopped transmitting (see
# the interop README): bytes and packets each way as the driver counts
# them (a sent frame counts once the device has taken it), what the
# queueing discipline handed to the driver, and the watchdog's transmit
# timeouts per queue.
awk '/eth0:/ { sub(/.*eth0:/, ""); split($0, f, " ");
	printf "iwarp-interop: eth0 rx %s bytes %s packets, tx %s bytes %s packets %s dropped\n", f[1], f[2], f[9], f[10], f[12] }' /proc/net/dev
[ -n "$netem" ] || [ ! -x /usr/sbin/tc ] || /usr/sbin/tc -s qdisc show dev eth0 | sed 's/^/iwarp-interop: eth0 qdisc: /'
for q in /sys/class/net/eth0/queues/tx-*; do
	[ -d "$q" ] || continue
	echo "iwarp-interop: eth0 $(basename "$q") transmit timeouts $(cat "$q/tx_timeout" 2>/dev/null)"
done
# What netem did: packets sent and dropped.
[ -z "$netem" ] || /usr/sbin/tc -s qdisc show dev eth0 | sed 's/^/iwarp-interop: netem: /'
echo "IWARP-INTEROP-RESULT rc=$rc"
finish
