#!/usr/bin/env bash
# Rebuilds vendor/smoltcp from the pristine crate (vendor/smoltcp-0.14.0,
# as published on crates.io) and the patch series (vendor/patches/*.patch,
# applied in file name order). See vendor/PATCHES.md.
#
#   vendor/rebuild-smoltcp.sh                 rebuild vendor/smoltcp in place
#                                             (refuses while git shows changes
#                                             under it, unless --force)
#   vendor/rebuild-smoltcp.sh --check         rebuild into a temporary
#                                             directory and compare with
#                                             vendor/smoltcp; on a difference
#                                             print it and exit 1
#   vendor/rebuild-smoltcp.sh --record NNNN-name
#                                             write the difference between the
#                                             series' result and vendor/smoltcp
#                                             as the next patch,
#                                             vendor/patches/NNNN-name.patch
#   vendor/rebuild-smoltcp.sh --into DIR      rebuild into DIR (new or empty)
#
# Only what git would track under vendor/smoltcp is compared or recorded:
# build output that its .gitignore names (target/, Cargo.lock) is not.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
pristine="$here/smoltcp-0.14.0"
patches="$here/patches"
vendored="$here/smoltcp"
# Files crates.io adds to every published crate; the vendored crate never
# had them (its manifest is the normalized Cargo.toml).
packaging=(.cargo_vcs_info.json Cargo.toml.orig Cargo.lock)

usage() {
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit "${1:-2}"
}

mode=rebuild force=0 name="" into=""
while [ $# -gt 0 ]; do
    case "$1" in
    --check) mode=check ;;
    --record)
        mode=record
        name="${2:-}"
        [ -n "$name" ] || usage
        shift
        ;;
    --into)
        mode=into
        into="${2:-}"
        [ -n "$into" ] || usage
        shift
        ;;
    --force) force=1 ;;
    -h | --help) usage 0 ;;
    *) usage ;;
    esac
    shift
done

work="$(mktemp -d "${TMPDIR:-/tmp}/rebuild-smoltcp.XXXXXX")"
trap 'rm -rf "$work"' EXIT
tree="$work/smoltcp"

# Git in the scratch tree alone: no hooks, signing or identity of the user's.
g() {
    git -C "$tree" -c core.hooksPath=/dev/null -c commit.gpgsign=false \
        -c user.name=rebuild -c user.email=rebuild@localhost \
        -c core.autocrlf=false -c core.fileMode=true "$@"
}

# The pristine crate, less the packaging files, then every patch in order,
# one commit each, so that a failing patch is named.
build() {
    mkdir -p "$tree"
    cp -a "$pristine/." "$tree/"
    for f in "${packaging[@]}"; do
        rm -f "$tree/$f"
    done
    g init -q
    g add -A
    g commit -q -m "smoltcp 0.14.0"
    local p
    for p in "$patches"/[0-9][0-9][0-9][0-9]-*.patch; do
        [ -e "$p" ] || continue
        if ! g apply --index --whitespace=nowarn "$p"; then
            echo "rebuild-smoltcp: $(basename "$p") does not apply" >&2
            exit 1
        fi
        g commit -q --allow-empty -m "$(basename "$p")"
    done
}

# The files of vendor/smoltcp git would track, NUL-separated, relative to it.
vendored_files() {
    git -C "$vendored" ls-files -z --cached --others --exclude-standard -- . |
        while IFS= read -r -d '' f; do
            [ -e "$vendored/$f" ] && printf '%s\0' "$f"
        done
}

# Replaces the scratch tree's files with vendor/smoltcp's and stages the
# difference.
stage_vendored() {
    g ls-files -z | (cd "$tree" && xargs -0 rm -f)
    vendored_files | (cd "$vendored" && tar --null -T - -cf -) | (cd "$tree" && tar -xf -)
    g add -A
}

build

case "$mode" in
check)
    stage_vendored
    if g diff --cached --quiet; then
        echo "vendor/smoltcp equals smoltcp 0.14.0 with the $(ls "$patches"/*.patch | wc -l) patches of vendor/patches"
        exit 0
    fi
    echo "vendor/smoltcp differs from smoltcp 0.14.0 with vendor/patches applied" >&2
    echo "(record the change as a new patch: vendor/rebuild-smoltcp.sh --record NNNN-name)" >&2
    g diff --cached --stat >&2
    g --no-pager diff --cached
    exit 1
    ;;
record)
    case "$name" in
    [0-9][0-9][0-9][0-9]-*) ;;
    *)
        echo "rebuild-smoltcp: the name is NNNN-words, e.g. 0029-bbr" >&2
        exit 2
        ;;
    esac
    last="$(ls "$patches" | sed -n 's/^\([0-9][0-9][0-9][0-9]\)-.*\.patch$/\1/p' | tail -1)"
    next="$(printf '%04d' $((10#${last:-0} + 1)))"
    if [ "${name%%-*}" != "$next" ]; then
        echo "rebuild-smoltcp: the next patch is number $next" >&2
        exit 2
    fi
    out="$patches/$name.patch"
    stage_vendored
    if g diff --cached --quiet; then
        echo "rebuild-smoltcp: vendor/smoltcp has no change beyond the series" >&2
        exit 1
    fi
    {
        # The shape of `git format-patch --zero-commit`, so that `git am`
        # takes the series as it stands.
        printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
        printf 'From: %s <%s>\n' "$(git -C "$root" config user.name || echo author)" \
            "$(git -C "$root" config user.email || echo author@localhost)"
        printf 'Date: %s\n' "$(LC_ALL=C date -R)"
        printf 'Subject: [PATCH] %s\n\n' "$(printf '%s' "${name#*-}" | tr - ' ')"
        printf 'What it does, and why.\n\nRFC: which RFC and section it follows (or: follows Linux, not RFC NNNN\nsection N, because ...).\n\nTests: the tests that fail without it.\n---\n'
        g diff --cached --stat
        echo
        g diff --cached --binary
    } >"$out"
    echo "wrote $out: edit its header (what, RFC, tests), then run --check"
    ;;
into)
    mkdir -p "$into"
    if [ -n "$(ls -A "$into")" ]; then
        echo "rebuild-smoltcp: $into is not empty" >&2
        exit 2
    fi
    g ls-files -z | (cd "$tree" && tar --null -T - -cf -) | (cd "$into" && tar -xf -)
    echo "rebuilt into $into"
    ;;
rebuild)
    if [ "$force" = 0 ] && [ -n "$(git -C "$root" status --porcelain -- "$vendored")" ]; then
        echo "rebuild-smoltcp: vendor/smoltcp has uncommitted changes; record them" >&2
        echo "(--record NNNN-name) or commit them first, or pass --force to lose them" >&2
        exit 1
    fi
    vendored_files | (cd "$vendored" && xargs -0 rm -f)
    find "$vendored" -mindepth 1 -type d -empty -not -path '*/target/*' -delete
    g ls-files -z | (cd "$tree" && tar --null -T - -cf -) | (cd "$vendored" && tar -xf -)
    echo "rebuilt vendor/smoltcp"
    ;;
esac
