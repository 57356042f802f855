# Starting and watching siw guests under qemu; sourced, not run.
# shellcheck shell=bash
# shellcheck disable=SC2034 # PAIR_RC_* are read by the caller
#
# Each guest is Debian's kernel plus the harness initramfs, booted under TCG
# (KVM hangs on the machines this runs on), with one virtio NIC on its own
# TAP in the harness namespace and its serial console in a log file. The
# guest's init prints markers (see guest-init.sh) that these functions wait
# for; every wait is bounded, and qemu itself runs under `timeout`.

# Seconds a guest may spend booting before its command starts.
GUEST_BOOT_ALLOWANCE=${IWARP_INTEROP_BOOT_SECS:-90}
GUEST_MEM_MB=512

# guest_start NAME VARIANT IP CMD LIMIT LOG
#   NAME     short tag, also names the TAP ("q" + NAME, at most 15 chars)
#   VARIANT  siw build (default, crc, cxgb, rev1)
#   IP       the guest's address; the last octet also picks the MAC
#   CMD      command line for the guest, words separated by spaces
#   LIMIT    seconds the command may run inside the guest
#   LOG      serial console log file
# GUEST_WAIT_FOR=IP (optional) makes the guest wait for IP to answer ARP
# before its command starts; GUEST_NETEM="loss 2% ..." (optional) puts netem
# with those parameters on its eth0. Sets GUEST_PID (the pid of the
# `timeout` wrapping qemu).
guest_start() {
	local name=$1 variant=$2 ip=$3 cmd=$4 limit=$5 log_file=$6
	local tap="q$name" last_octet mac append
	case "$cmd${GUEST_NETEM:-}" in *,*) die "guest commands cannot contain commas: $cmd ${GUEST_NETEM:-}" ;; esac
	last_octet=${ip##*.}
	mac=$(printf '52:54:00:99:00:%02x' "$last_octet")
	netns_add_tap "$tap"
	# no_timer_check: under TCG on a loaded host the kernel's check that the
	# 8254 timer reaches the IO-APIC can miss its ticks and panic at boot
	# ("IO-APIC + timer doesn't work"); virtual machines skip that check.
	append="console=ttyS0 loglevel=4 panic=-1 ipv6.disable=1 no_timer_check"
	append+=" iwarp.variant=$variant iwarp.ip=$ip/$NET_BITS"
	append+=" iwarp.cmd=${cmd// /,} iwarp.timeout=$limit"
	[ -z "${GUEST_WAIT_FOR:-}" ] || append+=" iwarp.wait_for=$GUEST_WAIT_FOR"
	[ -z "${GUEST_NETEM:-}" ] || append+=" iwarp.netem=${GUEST_NETEM// /,}"
	# Extra kernel arguments for debugging a guest (e.g. loglevel=7).
	append+=" ${IWARP_INTEROP_KERNEL_ARGS:-}"
	: >"$log_file"
	# event_idx=off: the guest notifies the device of every batch it
	# queues, instead of when the device's event index asks for it. With
	# the event index, qemu under TCG now and then stopped serving the
	# transmit ring (see "A guest that stops transmitting" in the README).
	local nic_opts=${IWARP_INTEROP_NIC_OPTS:-event_idx=off}
	timeout -k 5 $((limit + GUEST_BOOT_ALLOWANCE)) \
		ip netns exec "$NETNS" qemu-system-x86_64 \
		-accel tcg -cpu max -smp 1 -m "$GUEST_MEM_MB" \
		-nodefaults -no-user-config -display none -monitor none -no-reboot \
		-serial "file:$log_file" \
		-kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
		-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=$mac,romfile=,$nic_opts" \
		>"$log_file.qemu" 2>&1 &
	GUEST_PID=$!
	netns_track_pid "$GUEST_PID"
}

# guest_wait_marker LOG MARKER SECONDS PID: 0 once LOG holds MARKER; 1 when
# the time runs out or the guest has exited without printing it.
guest_wait_marker() {
	local log_file=$1 marker=$2 secs=$3 pid=$4 deadline
	deadline=$(($(date +%s) + secs))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		grep -qa "$marker" "$log_file" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || {
			grep -qa "$marker" "$log_file" 2>/dev/null
			return
		}
		sleep 0.2
	done
	return 1
}

# guest_wait PID: waits for the guest's qemu (bounded by its own timeout) and
# returns qemu's status (124 when `timeout` had to kill it).
guest_wait() {
	local rc=0
	wait "$1" || rc=$?
	netns_untrack_pid "$1"
	return "$rc"
}

# guest_result LOG: the command's exit status from the result marker, or
# "none" when the guest never printed one.
guest_result() {
	local rc
	rc=$(tr -d '\r' <"$1" | sed -n 's/^IWARP-INTEROP-RESULT rc=\([0-9]*\)$/\1/p' | tail -n 1)
	echo "${rc:-none}"
}

# guest_elapsed_ms LOG: the command's wall time in milliseconds as the
# guest measured it, or nothing.
guest_elapsed_ms() {
	tr -d '\r' <"$1" | sed -n 's/^IWARP-INTEROP-ELAPSED ms=\([0-9]*\)$/\1/p' | tail -n 1
}

# guest_netem LOG: the netem parameters the guest applied, or nothing.
guest_netem() {
	tr -d '\r' <"$1" | sed -n 's/^IWARP-INTEROP-NETEM //p' | tail -n 1
}

# guest_netem_drops LOG: "SENT DROPPED" packets of the guest's netem qdisc
# at the end of its command (tc -s: " Sent B bytes P pkt (dropped D, ...").
guest_netem_drops() {
	tr -d '\r' <"$1" | sed -n 's/^iwarp-interop: netem:  *Sent [0-9]* bytes \([0-9]*\) pkt (dropped \([0-9]*\),.*/\1 \2/p' |
		head -n 1
}

# guest_boot_failed LOG: prints a line when the guest's kernel panicked
# before it was ready to run the case (a fault of the emulator, not of the
# case); prints nothing otherwise.
guest_boot_failed() {
	local panic
	grep -qa 'IWARP-INTEROP-READY' "$1" 2>/dev/null && return 0
	panic=$(tr -d '\r' <"$1" 2>/dev/null | grep -a -m 1 'Kernel panic' | sed 's/^\[ *[0-9.]*\] *//') || true
	[ -z "$panic" ] || echo "guest kernel panicked while booting: $panic"
}

# guest_log_tail LOG N: the last N lines of a guest's log that are not
# kernel messages ("[    1.234] ..."), which say nothing about the case.
# Succeeds when there are none.
guest_log_tail() {
	{ grep -av '^\[ *[0-9]' "$1" || true; } | tail -n "$2"
}

# guest_setup_failure LOG: why the guest could not start its command, if so.
guest_setup_failure() {
	tr -d '\r' <"$1" | sed -n 's/^IWARP-INTEROP-SETUP-FAILED //p' | tail -n 1
}

# wait_pair PID_A PID_B GRACE: waits (bounded by each process's own time
# limit) until both have exited; PID_B may be empty. Once one end has gone
# (or at once, for a single pid), the other gets GRACE seconds to finish by
# itself, then is killed: rping keeps listening forever when no client ever
# comes, and its client can hang after a refused connect, so a peer that has
# already failed must not cost a full time limit. Sets PAIR_RC_A/PAIR_RC_B
# to each exit status, or "killed".
wait_pair() {
	local a=$1 b=${2:-} grace=$3 gone_at='' pid alive n
	local -A killed=()
	[ -n "$b" ] && n=2 || n=1
	[ -n "$b" ] || gone_at=$(date +%s)
	while :; do
		alive=0
		for pid in $a $b; do kill -0 "$pid" 2>/dev/null && alive=$((alive + 1)); done
		[ "$alive" -gt 0 ] || break
		if [ "$alive" -lt "$n" ] || [ -z "$b" ]; then
			gone_at=${gone_at:-$(date +%s)}
			if [ $(($(date +%s) - gone_at)) -ge "$grace" ]; then
				for pid in $a $b; do
					if kill -0 "$pid" 2>/dev/null; then
						kill "$pid" 2>/dev/null || true
						killed[$pid]=1
					fi
				done
				break
			fi
		fi
		sleep 0.2
	done
	PAIR_RC_A=0
	wait "$a" 2>/dev/null || PAIR_RC_A=$?
	[ -z "${killed[$a]:-}" ] || PAIR_RC_A=killed
	netns_untrack_pid "$a"
	PAIR_RC_B=
	if [ -n "$b" ]; then
		PAIR_RC_B=0
		wait "$b" 2>/dev/null || PAIR_RC_B=$?
		[ -z "${killed[$b]:-}" ] || PAIR_RC_B=killed
		netns_untrack_pid "$b"
	fi
}
