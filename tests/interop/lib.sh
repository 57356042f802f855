# Common settings and functions of the interop harness; sourced, not run.
# shellcheck shell=bash
# shellcheck disable=SC2034 # settings used by the scripts that source this

INTEROP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$INTEROP_DIR/../.." && pwd)
CACHE_ROOT=${IWARP_INTEROP_CACHE:-/var/cache/iwarp-interop}

# The four siw builds and the three constants each one sets in siw_main.c:
# mpa_crc_required, peer_to_peer, mpa_version.
SIW_VARIANTS="default crc cxgb rev1"
siw_variant_constants() {
	case "$1" in
	default) echo "false false 2" ;;
	crc) echo "true false 2" ;;
	cxgb) echo "true true 2" ;;
	rev1) echo "true false 1" ;;
	*) return 1 ;;
	esac
}

log() { printf '[interop %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

need_root() {
	[ "$(id -u)" = 0 ] || die "needs root (network namespaces, TAP devices, apt)"
}

# The kernel ABI that Debian's linux-image-amd64 points at, e.g. 6.1.0-56-amd64.
# IWARP_INTEROP_KVER overrides it.
debian_kernel_version() {
	if [ -n "${IWARP_INTEROP_KVER:-}" ]; then
		echo "$IWARP_INTEROP_KVER"
		return
	fi
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}

# The rdma-core programs setup.sh copies into the guest image.
GUEST_TOOLS="rping ucmatose udaddy rdma_server rdma_client ib_write_bw ib_read_bw ib_send_bw
ib_write_lat ib_read_lat ib_send_lat ibv_devices ibv_devinfo ibv_rc_pingpong rdma"
# For the lossy cases: iproute2's tc (busybox's has no netem) and ethtool
# (segmentation offloads off, so netem drops frames, not 64 KB GSO packets).
# They go to /usr/sbin in the guest, where guest-init.sh calls them by path
# (/bin's busybox applets come first in its PATH).
NETEM_TOOLS="tc ethtool"
# What run.sh calls on the host.
RUN_TOOLS="qemu-system-x86_64 tshark tcpdump ip timeout"
# What setup.sh calls on the host to build the image.
SETUP_TOOLS="busybox readelf modinfo cpio xz gzip make"

# The commands .ci/packages promises (its second column on), one a line:
# every tool above must be among them, so .ci/run installs it before the
# first step that needs it.
listed_commands() {
	sed -e 's/#.*//' "$REPO_ROOT/.ci/packages" | awk 'NF > 1 { for (i = 2; i <= NF; i++) if ($i != "-") print $i }'
}

# Where setup.sh leaves the kernel and initramfs for one kernel version.
cache_dir_for() { echo "$CACHE_ROOT/$1"; }

# Loads the paths setup.sh recorded (KVER, KERNEL, INITRD, VARIANTS).
load_setup_env() {
	local env_file="$CACHE_ROOT/current.env"
	[ -f "$env_file" ] || die "no $env_file: run tests/interop/setup.sh first"
	# shellcheck disable=SC1090
	. "$env_file"
	if [ ! -f "$KERNEL" ] || [ ! -f "$INITRD" ]; then
		die "cache is incomplete: run tests/interop/setup.sh"
	fi
}

# The project's own tool, when it has been built.
iwarp_bin() { echo "${IWARP_BIN:-$REPO_ROOT/target/release/iwarp}"; }

# Where the C ABI library's libibverbs.so.1 and librdmacm.so.1 are
# (`cargo build --release -p iwarp-rdma-shim`).
shim_dir() { echo "${IWARP_SHIM_DIR:-$REPO_ROOT/target/release/rdma-shim}"; }

# Whether the shim is built.
have_shim() { [ -e "$(shim_dir)/libibverbs.so.1" ] && [ -e "$(shim_dir)/librdmacm.so.1" ]; }

# Whether the iwarp binary exists and has a given subcommand (clap answers
# `SUB --help` with status 0 only for a subcommand it knows).
iwarp_has_subcommand() {
	local bin
	bin=$(iwarp_bin)
	[ -x "$bin" ] && "$bin" "$1" --help >/dev/null 2>&1
}
