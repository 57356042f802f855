//! The library exports every symbol, at its version, that Debian 12's
//! rdma-core programs and the provider libraries perftest loads import:
//! the dynamic loader resolves them all at start (BIND_NOW).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `(version, name)` of the dynamic symbols `objdump -T` lists for `file`,
/// defined (`undefined == false`) or imported.
fn symbols(objdump: &Path, file: &Path, undefined: bool) -> BTreeSet<(String, String)> {
    let out = Command::new(objdump)
        .arg("-T")
        .arg(file)
        .output()
        .expect("objdump");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("*UND*") == undefined)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (name, version) = (f.last()?, f.get(f.len().checked_sub(2)?)?);
            let version = version.trim_matches(|c| c == '(' || c == ')');
            (version.starts_with("IBVERBS") || version.starts_with("RDMACM"))
                .then(|| (version.to_string(), name.to_string()))
        })
        .collect()
}

fn listed(file: &str) -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (v, n) = l.split_once(' ').unwrap();
            (v.to_string(), n.trim().to_string())
        })
        .collect()
}

#[test]
fn every_imported_symbol_is_exported_at_its_version() {
    let Some(objdump) = common::tool("objdump", "binutils") else {
        return;
    };
    let lib = common::shim_dir().join("libibverbs.so.1");
    let exported = symbols(&objdump, &lib, false);
    // What the programs imported when the list was taken...
    let mut needed = listed("abi/imports-debian12.txt");
    // ...and what the installed ones import now.
    for p in [
        "/usr/bin/rping",
        "/usr/bin/ucmatose",
        "/usr/bin/rdma_server",
        "/usr/bin/rdma_client",
        "/usr/bin/rstream",
        "/usr/bin/ib_write_bw",
        "/usr/bin/ib_read_bw",
        "/usr/bin/ib_send_bw",
        "/usr/bin/ib_write_lat",
        "/usr/bin/ib_read_lat",
        "/usr/bin/ibv_devinfo",
        "/usr/lib/x86_64-linux-gnu/libmlx5.so.1",
        "/usr/lib/x86_64-linux-gnu/libefa.so.1",
    ] {
        if Path::new(p).exists() {
            needed.extend(symbols(&objdump, Path::new(p), true));
        }
    }
    let missing: Vec<_> = needed.difference(&exported).collect();
    assert!(missing.is_empty(), "not exported: {missing:?}");
    // Exactly the list build.rs versions: nothing leaks unversioned.
    assert_eq!(exported, listed("abi/symbols.txt"));
    let soname = Command::new(&objdump).arg("-p").arg(&lib).output().unwrap();
    assert!(
        String::from_utf8_lossy(&soname.stdout).contains("SONAME               libibverbs.so.1")
    );
}
