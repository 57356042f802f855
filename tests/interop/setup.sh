#!/usr/bin/env bash
# Builds the Linux soft-iWARP (siw) test peer from Debian's packages:
# Debian's kernel, siw.ko built out of tree in four MPA policy variants, and
# one initramfs (busybox + modules + rdma-core tools) that boots under qemu.
#
# Idempotent: every step leaves a stamp in the cache, keyed by kernel version
# and by the inputs of the step, and is skipped when the stamp matches. A
# second run does no apt, download, compile or cpio work.
#
# Usage: tests/interop/setup.sh     (root; IWARP_INTEROP_CACHE picks the cache)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
need_root

APT_OPTS=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=900)
export DEBIAN_FRONTEND=noninteractive
apt_updated=0

apt_update_once() {
	if [ "$apt_updated" = 0 ]; then
		log "apt-get update"
		apt-get -q -o DPkg::Lock::Timeout=900 update >/dev/null
		apt_updated=1
	fi
}

pkg_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

ensure_packages() {
	local missing=() p
	for p in "$@"; do
		pkg_installed "$p" || missing+=("$p")
	done
	[ "${#missing[@]}" = 0 ] && return 0
	apt_update_once
	log "installing: ${missing[*]}"
	apt-get "${APT_OPTS[@]}" install "${missing[@]}" >"$CACHE_ROOT/apt-install.log" 2>&1 ||
		{
			tail -n 20 "$CACHE_ROOT/apt-install.log" >&2
			die "apt-get install failed"
		}
}

# A stamp records the inputs a step was done with; the step reruns when they
# change.
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

mkdir -p "$CACHE_ROOT"
t_start=$(date +%s)

# 1. Host tools: the emulator, busybox for the guest, the RDMA userspace to
#    copy into it, capture and decode tools, and what building modules needs.
#    .ci/packages is their one list; .ci/run installs it before its first step.
# shellcheck disable=SC2046 # one word per package
ensure_packages $(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$REPO_ROOT/.ci/packages" | awk '{print $1}')

# 2. The kernel version Debian's linux-image-amd64 currently points at.
KVER=$(debian_kernel_version)
if [ -z "$KVER" ]; then
	apt_update_once
	KVER=$(debian_kernel_version)
fi
[ -n "$KVER" ] || die "cannot tell which kernel linux-image-amd64 depends on"
SERIES=$(echo "$KVER" | sed -n 's/^\([0-9]*\.[0-9]*\)\..*/\1/p')
[ -n "$SERIES" ] || die "cannot read a kernel series out of $KVER"
CACHE=$(cache_dir_for "$KVER")
mkdir -p "$CACHE"
log "kernel $KVER (source series $SERIES), cache $CACHE"

ensure_packages "linux-headers-$KVER" "linux-source-$SERIES"
HEADERS=/usr/src/linux-headers-$KVER
SOURCE_TARBALL=/usr/src/linux-source-$SERIES.tar.xz
[ -d "$HEADERS" ] || die "missing $HEADERS"
[ -f "$SOURCE_TARBALL" ] || die "missing $SOURCE_TARBALL"
headers_ver=$(dpkg-query -W -f='${Version}' "linux-headers-$KVER")
source_ver=$(dpkg-query -W -f='${Version}' "linux-source-$SERIES")
if [ "$headers_ver" != "$source_ver" ]; then
	log "warning: linux-source-$SERIES $source_ver differs from linux-headers-$KVER $headers_ver"
fi

# 3. Debian's kernel and its modules, unpacked from the linux-image package
#    (not installed: the host keeps its own kernel and /boot untouched).
KDIR=$CACHE/kernel
if ! stamp_ok "$KDIR/.stamp" "$KVER"; then
	log "fetching linux-image-$KVER"
	rm -rf "$KDIR" && mkdir -p "$KDIR/deb"
	(cd "$KDIR/deb" && apt-get -q download "linux-image-$KVER" >/dev/null 2>&1) ||
		{
			apt_update_once
			(cd "$KDIR/deb" && apt-get -q download "linux-image-$KVER" >/dev/null)
		} || die "apt-get download linux-image-$KVER failed"
	dpkg-deb -x "$KDIR"/deb/linux-image-*.deb "$KDIR/root"
	cp "$KDIR/root/boot/vmlinuz-$KVER" "$KDIR/vmlinuz"
	rm -rf "$KDIR/deb"
	echo "$KVER" >"$KDIR/.stamp"
fi

# 3b. The uncompressed kernel, booted through its PVH entry point: qemu then
#     skips the BIOS and the in-guest XZ decompression, which under TCG on a
#     busy 2-core machine took 6-14 s of every guest start (measured: first
#     kernel message after 14 s with the bzImage, after 1 s with PVH).
#     Falls back to the bzImage when the kernel has no PVH note.
if ! stamp_ok "$KDIR/.pvh-stamp" "$KVER" || [ ! -f "$KDIR/boot-kernel" ]; then
	rm -f "$KDIR/vmlinux"
	xz_at=$(LC_ALL=C grep -obUaP '\xfd\x37\x7a\x58\x5a\x00' "$KDIR/vmlinuz" | head -n 1 | cut -d: -f1 || true)
	if [ -n "$xz_at" ]; then
		# xz complains about the bzImage's bytes after the stream; the
		# ELF check below is what decides.
		tail -c +$((xz_at + 1)) "$KDIR/vmlinuz" | xz -dc >"$KDIR/vmlinux" 2>/dev/null || true
	fi
	# XEN_ELFNOTE_PHYS32_ENTRY (18) is the PVH entry point qemu looks for.
	if [ -s "$KDIR/vmlinux" ] && readelf -n "$KDIR/vmlinux" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)'; then
		echo "$KDIR/vmlinux" >"$KDIR/boot-kernel"
	else
		log "no PVH entry in the kernel: guests boot the bzImage (slower)"
		rm -f "$KDIR/vmlinux"
		echo "$KDIR/vmlinuz" >"$KDIR/boot-kernel"
	fi
	echo "$KVER" >"$KDIR/.pvh-stamp"
fi
BOOT_KERNEL=$(cat "$KDIR/boot-kernel")

# 4. siw's source out of linux-source, once per source version.
SRC=$CACHE/siw-src
if ! stamp_ok "$SRC/.stamp" "$source_ver"; then
	log "extracting drivers/infiniband/sw/siw from $SOURCE_TARBALL"
	rm -rf "$SRC" "$CACHE/tar" && mkdir -p "$CACHE/tar"
	tar -xJf "$SOURCE_TARBALL" -C "$CACHE/tar" --wildcards "linux-source-$SERIES/drivers/infiniband/sw/siw/*"
	mv "$CACHE/tar/linux-source-$SERIES/drivers/infiniband/sw/siw" "$SRC"
	rm -rf "$CACHE/tar"
	echo "$source_ver" >"$SRC/.stamp"
fi

# 5. One siw.ko per policy variant: edit the three constants, build out of
#    tree against the matching headers, and check that the edits took.
set_siw_constants() {
	local file=$1 crc=$2 p2p=$3 rev=$4
	sed -i \
		-e "s/^const bool mpa_crc_required\( = [a-z]*\)\{0,1\};/const bool mpa_crc_required = $crc;/" \
		-e "s/^const bool peer_to_peer\( = [a-z]*\)\{0,1\};/const bool peer_to_peer = $p2p;/" \
		-e "s/^u_char mpa_version = MPA_REVISION_[0-9];/u_char mpa_version = MPA_REVISION_$rev;/" \
		"$file"
	if ! grep -qx "const bool mpa_crc_required = $crc;" "$file" ||
		! grep -qx "const bool peer_to_peer = $p2p;" "$file" ||
		! grep -qx "u_char mpa_version = MPA_REVISION_$rev;" "$file"; then
		die "siw_main.c does not have the expected policy constants (source changed?)"
	fi
}

for v in $SIW_VARIANTS; do
	read -r crc p2p rev <<<"$(siw_variant_constants "$v")"
	dir=$CACHE/siw/$v
	want="$source_ver $headers_ver crc=$crc p2p=$p2p rev=$rev"
	if stamp_ok "$dir/.stamp" "$want" && [ -f "$dir/siw.ko" ]; then
		continue
	fi
	log "building siw.ko variant $v (mpa_crc_required=$crc peer_to_peer=$p2p mpa_version=$rev)"
	rm -rf "$dir" && mkdir -p "$(dirname "$dir")"
	cp -r "$SRC" "$dir"
	set_siw_constants "$dir/siw_main.c" "$crc" "$p2p" "$rev"
	make -C "$HEADERS" M="$dir" CONFIG_RDMA_SIW=m -j"$(nproc)" modules >"$dir/build.log" 2>&1 ||
		{
			tail -n 30 "$dir/build.log" >&2
			die "siw variant $v failed to build"
		}
	modinfo -F vermagic "$dir/siw.ko" | grep -q "^$KVER " || die "siw.ko $v has the wrong vermagic"
	echo "$want" >"$dir/.stamp"
done

# 6. The initramfs: one image holding all four siw builds; the kernel command
#    line picks one (iwarp.variant=).
# GUEST_TOOLS and NETEM_TOOLS (lib.sh) are what the image carries.
# Uncompressed: unpacking gzip inside a TCG guest costs more than handing
# qemu a bigger file.
INITRD=$CACHE/initramfs.cpio
inputs_hash=$(
	{
		cat "$INTEROP_DIR/guest-init.sh" "$INTEROP_DIR/setup.sh"
		for v in $SIW_VARIANTS; do sha256sum "$CACHE/siw/$v/siw.ko"; done
		dpkg-query -W busybox-static rdmacm-utils perftest ibverbs-utils ibverbs-providers iproute2 ethtool libc6
		# The netem module comes from the kernel package (keyed by KVER).
	} | sha256sum | cut -d' ' -f1
)
if ! stamp_ok "$CACHE/initramfs.stamp" "$KVER $inputs_hash" || [ ! -f "$INITRD" ]; then
	log "making the initramfs"
	STAGE=$CACHE/initramfs-root
	rm -rf "$STAGE" && mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,etc,modules,root}
	cp /bin/busybox "$STAGE/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ -e "$STAGE/bin/$applet" ] || ln -s busybox "$STAGE/bin/$applet"
	done
	mknod -m 600 "$STAGE/dev/console" c 5 1
	mknod -m 666 "$STAGE/dev/null" c 1 3
	install -m 755 "$INTEROP_DIR/guest-init.sh" "$STAGE/init"

	# Kernel modules in the order modprobe would load them; siw itself is
	# loaded last, by variant.
	MODROOT=$KDIR/root
	mkdir -p "$MODROOT/lib/modules/$KVER/extra"
	cp "$CACHE/siw/default/siw.ko" "$MODROOT/lib/modules/$KVER/extra/siw.ko"
	depmod -b "$MODROOT" "$KVER"
	: >"$STAGE/modules/order"
	for m in virtio_pci virtio_net crc32c_generic siw rdma_ucm ib_uverbs; do
		modprobe -d "$MODROOT" -S "$KVER" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
	done | awk '!seen[$0]++' | while read -r path; do
		name=$(basename "$path")
		[ "$name" = siw.ko ] && continue
		cp "$path" "$STAGE/modules/$name"
		echo "$name" >>"$STAGE/modules/order"
	done
	# sch_netem and what it needs beyond the above, loaded only by a guest
	# that is told to emulate a lossy link (iwarp.netem=).
	: >"$STAGE/modules/netem.order"
	modprobe -d "$MODROOT" -S "$KVER" --show-depends sch_netem | awk '$1 == "insmod" { print $2 }' |
		while read -r path; do
			name=$(basename "$path")
			grep -qx "$name" "$STAGE/modules/order" && continue
			cp "$path" "$STAGE/modules/$name"
			echo "$name" >>"$STAGE/modules/netem.order"
		done
	grep -qx sch_netem.ko "$STAGE/modules/netem.order" || die "no sch_netem.ko in linux-image-$KVER"
	# Out-of-tree builds carry debug info (5 MB each); Debian's are stripped.
	for v in $SIW_VARIANTS; do
		strip --strip-debug -o "$STAGE/modules/siw-$v.ko" "$CACHE/siw/$v/siw.ko"
	done

	# rdma-core tools with their shared-library closure, the siw verbs
	# provider (dlopen'ed, so ldd of the tools misses it) and libgcc_s
	# (glibc dlopens it for pthread_exit).
	copy_libs_of() {
		local lib
		for lib in $(ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
			[ -e "$STAGE$lib" ] && continue
			mkdir -p "$STAGE$(dirname "$lib")"
			cp -L "$lib" "$STAGE$lib"
		done
	}
	copy_with_libs() {
		local f
		for f in "$@"; do
			mkdir -p "$STAGE$(dirname "$f")"
			cp -L "$f" "$STAGE$f"
			copy_libs_of "$f"
		done
	}
	tools=()
	for t in $GUEST_TOOLS; do
		p=$(command -v "$t") || die "missing guest tool $t"
		tools+=("$p")
	done
	provider=$(find /usr/lib/x86_64-linux-gnu/libibverbs -name 'libsiw-rdmav*.so' | head -n 1)
	[ -n "$provider" ] || die "no siw verbs provider (ibverbs-providers)"
	libgcc=/lib/x86_64-linux-gnu/libgcc_s.so.1
	[ -f "$libgcc" ] || die "missing $libgcc"
	copy_with_libs "${tools[@]}" "$provider" "$libgcc"
	for t in $NETEM_TOOLS; do
		p=$(command -v "$t") || die "missing guest tool $t"
		mkdir -p "$STAGE/usr/sbin"
		cp -L "$p" "$STAGE/usr/sbin/$t"
		copy_libs_of "$p"
	done
	mkdir -p "$STAGE/etc/libibverbs.d"
	cp /etc/libibverbs.d/siw.driver "$STAGE/etc/libibverbs.d/"

	(cd "$STAGE" && find . -print0 | sort -z | cpio --null -o -H newc --quiet) >"$INITRD.tmp"
	mv "$INITRD.tmp" "$INITRD"
	rm -rf "$STAGE"
	echo "$KVER $inputs_hash" >"$CACHE/initramfs.stamp"
fi

cat >"$CACHE_ROOT/current.env.tmp" <<EOF
KVER=$KVER
KERNEL=$BOOT_KERNEL
INITRD=$INITRD
VARIANTS="$SIW_VARIANTS"
EOF
mv "$CACHE_ROOT/current.env.tmp" "$CACHE_ROOT/current.env"
log "ready in $(($(date +%s) - t_start)) s: $BOOT_KERNEL, $INITRD ($(du -h "$INITRD" | cut -f1))"
