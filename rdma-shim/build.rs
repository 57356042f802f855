//! Turns `abi/symbols.txt` into the linker version script that gives each
//! exported symbol its rdma-core version, names the library
//! `libibverbs.so.1`, and links `target/<profile>/rdma-shim/libibverbs.so.1`
//! and `librdmacm.so.1` to it (in `target/<profile>/deps/`): one file under both names, which the
//! dynamic loader maps once (it recognises the same file), so libibverbs
//! and librdmacm share one stack.

use std::collections::BTreeMap;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let list = dir.join("abi/symbols.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let text = std::fs::read_to_string(&list).expect("abi/symbols.txt");
    let mut by_version: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (version, name) = line.split_once(' ').expect("VERSION name");
        by_version.entry(version).or_default().push(name.trim());
    }
    // Every version rdma-core 44 defines, in order, each inheriting the
    // one before it in its family, as the real libraries' scripts do.
    let families: [&[&str]; 3] = [
        &[
            "IBVERBS_1.0",
            "IBVERBS_1.1",
            "IBVERBS_1.5",
            "IBVERBS_1.6",
            "IBVERBS_1.7",
            "IBVERBS_1.8",
            "IBVERBS_1.9",
            "IBVERBS_1.10",
            "IBVERBS_1.11",
            "IBVERBS_1.12",
            "IBVERBS_1.13",
            "IBVERBS_1.14",
        ],
        &["IBVERBS_PRIVATE_34"],
        &["RDMACM_1.0", "RDMACM_1.1", "RDMACM_1.2", "RDMACM_1.3"],
    ];
    let mut script = String::new();
    for family in families {
        for (i, v) in family.iter().enumerate() {
            script.push_str(&format!("{v} {{\n"));
            if let Some(names) = by_version.remove(v) {
                script.push_str("  global:\n");
                for n in names {
                    script.push_str(&format!("    {n};\n"));
                }
            }
            match i.checked_sub(1) {
                Some(p) => script.push_str(&format!("}} {};\n", family[p])),
                None => script.push_str("};\n"),
            }
        }
    }
    assert!(by_version.is_empty(), "unknown versions: {by_version:?}");
    let map = out.join("exports.map");
    std::fs::write(&map, script).unwrap();
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libibverbs.so.1");
    // Threads of the stack run to the end of the process: never unload.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");

    // OUT_DIR is target/<profile>/build/<package>-<hash>/out.
    if let Some(profile_dir) = out.ancestors().nth(3) {
        let names = profile_dir.join("rdma-shim");
        let _ = std::fs::create_dir_all(&names);
        for soname in ["libibverbs.so.1", "librdmacm.so.1"] {
            let link = names.join(soname);
            let _ = std::fs::remove_file(&link);
            // deps/ holds the library `cargo test` builds too (`cargo
            // build` also copies it up a level, `cargo test` does not).
            let _ = std::os::unix::fs::symlink("../deps/libiwarp_rdma_shim.so", &link);
        }
    }
}
