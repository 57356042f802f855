//! The workspace's `rust-version` must not promise a compiler older than
//! one that a member or the vendored smoltcp declares it needs: a user on
//! that compiler would get a build error instead of cargo's clear refusal.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The value of `key = "..."` in `[table]` of a manifest, if the table has
/// that key as a literal string (not `key.workspace = true`).
fn string_in_table(manifest: &str, table: &str, key: &str) -> Option<String> {
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == format!("[{table}]");
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if inside && k.trim() == key {
            return Some(v.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// `workspace.members` of the root manifest, one line.
fn members(manifest: &str) -> Vec<String> {
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    let list = line
        .split_once('[')
        .and_then(|(_, l)| l.split_once(']'))
        .expect("[...]")
        .0;
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

fn version(text: &str) -> (u32, u32, u32) {
    let mut parts = text.split('.').map(|p| {
        p.parse::<u32>()
            .unwrap_or_else(|_| panic!("version {text}"))
    });
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

#[test]
fn parses_the_manifest_shapes_it_reads() {
    let manifest = "[package]\nname = \"a\"\nrust-version = \"1.89\"\n[dependencies]\nrust-version = \"9.0\"\n";
    assert_eq!(
        string_in_table(manifest, "package", "rust-version").as_deref(),
        Some("1.89")
    );
    assert_eq!(
        string_in_table(
            "[package]\nrust-version.workspace = true\n",
            "package",
            "rust-version"
        ),
        None
    );
    assert_eq!(members("members = [\"a\", \"b\"]"), ["a", "b"]);
    assert!(version("1.91") > version("1.89.1"));
}

#[test]
fn workspace_rust_version_covers_every_member_and_the_vendored_smoltcp() {
    let root_manifest = read(&root().join("Cargo.toml"));
    let workspace = string_in_table(&root_manifest, "workspace.package", "rust-version")
        .expect("[workspace.package] rust-version");
    let mut manifests: Vec<PathBuf> = members(&root_manifest)
        .iter()
        .map(|m| root().join(m).join("Cargo.toml"))
        .collect();
    assert!(manifests.len() > 5, "members not found: {manifests:?}");
    manifests.push(root().join("vendor/smoltcp/Cargo.toml"));
    let mut declared = 0;
    for path in &manifests {
        let manifest = read(path);
        let Some(own) = string_in_table(&manifest, "package", "rust-version") else {
            // Inherits the workspace's.
            assert!(
                manifest.contains("rust-version.workspace = true"),
                "{} declares no rust-version",
                path.display()
            );
            continue;
        };
        declared += 1;
        assert!(
            version(&workspace) >= version(&own),
            "{} needs Rust {own}, the workspace says {workspace}",
            path.display()
        );
    }
    // crc32c-fold and the vendored smoltcp declare their own.
    assert!(declared >= 2, "expected own declarations, found {declared}");
}
