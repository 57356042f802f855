#!/usr/bin/env bash
# Seeds the corpus and runs fuzz targets for a bounded time each.
#
#   fuzz/run.sh [SECONDS] [TARGET...]     (default: 60 s, every target)
#
# Runs on a stable toolchain without a sanitizer (`-s none`: the crates
# are #![forbid(unsafe_code)], so ASan would mostly watch std). Set
# FUZZ_SANITIZER=address to build with AddressSanitizer instead; that
# needs RUSTC_BOOTSTRAP=1 on stable, which this script then sets.
# Crashes land in fuzz/artifacts/<target>/; the run stops at the first.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
secs="${1:-60}"
shift || true
sanitizer="${FUZZ_SANITIZER:-none}"
if [ "$sanitizer" != none ]; then
    export RUSTC_BOOTSTRAP=1
    # cargo caches rustc's answers; one cached without RUSTC_BOOTSTRAP
    # would refuse the -Z sanitizer flag.
    export CARGO_CACHE_RUSTC_INFO=0
fi

cd "$here"
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi

cargo run -q --manifest-path "$here/../Cargo.toml" -p iwarp-tests --example fuzz_seeds -- \
    --out "$here/corpus"
cargo fuzz build -s "$sanitizer"

for t in "${targets[@]}"; do
    echo "== $t: ${secs}s"
    cargo fuzz run -s "$sanitizer" "$t" -- \
        -max_total_time="$secs" -dict="$here/dict/iwarp.dict" -print_final_stats=1
done
