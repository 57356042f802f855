//! vendor/smoltcp must be exactly smoltcp 0.14.0 as published with the
//! patch series of vendor/patches applied (vendor/rebuild-smoltcp.sh), so
//! that every change to the TCP under RDMA is a patch someone can review.
//! A change made in vendor/smoltcp alone is caught, and `--record` turns it
//! into the next patch.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn have_git() -> bool {
    Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} {args:?}: {e}"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs git in `dir` with an identity of its own, so that the test needs no
/// user configuration.
fn git(dir: &Path, args: &[&str]) {
    let mut all = vec![
        "-c",
        "user.name=test",
        "-c",
        "user.email=test@localhost",
        "-c",
        "commit.gpgsign=false",
    ];
    all.extend_from_slice(args);
    let o = run(dir, "git", &all);
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
}

/// Copies the files git tracks under `vendor/` into `to/vendor`.
fn copy_vendor(to: &Path) {
    let listed = run(&root(), "git", &["ls-files", "-z", "--", "vendor"]);
    assert!(listed.status.success(), "{}", text(&listed));
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).expect("a UTF-8 path");
        let (from, dest) = (root().join(name), to.join(name));
        if !from.exists() {
            continue;
        }
        fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
        fs::copy(&from, &dest).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn vendored_smoltcp_is_the_pristine_crate_with_the_series() {
    if !have_git() {
        capture::skip::skip("git is not installed");
        return;
    }
    let o = run(&root(), "bash", &["vendor/rebuild-smoltcp.sh", "--check"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_change_outside_the_series_is_caught_then_recorded_as_the_next_patch() {
    if !have_git() {
        capture::skip::skip("git is not installed");
        return;
    }
    let scratch = std::env::temp_dir().join(format!("iwarp-series-{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    copy_vendor(&scratch);
    git(&scratch, &["init", "-q"]);
    git(&scratch, &["add", "-A"]);
    git(&scratch, &["commit", "-q", "-m", "copy"]);
    let script = "vendor/rebuild-smoltcp.sh";
    let check = || run(&scratch, "bash", &[script, "--check"]);
    assert!(check().status.success(), "{}", text(&check()));

    // A change made in the vendored tree alone: a file edited, one added.
    let stats = scratch.join("vendor/smoltcp/src/socket/tcp/stats.rs");
    let edited = fs::read_to_string(&stats).expect("stats.rs") + "// changed\n";
    fs::write(&stats, edited).expect("write");
    fs::write(scratch.join("vendor/smoltcp/src/added.rs"), "// new\n").expect("write");
    let caught = check();
    assert!(!caught.status.success(), "the change passed the check");
    let said = text(&caught);
    assert!(
        said.contains("+// changed") && said.contains("src/added.rs"),
        "{said}"
    );

    // Only the next number (one past the highest, as the series may have
    // gaps while patches are written apart) is accepted; the patch then
    // makes the check pass.
    let count = fs::read_dir(scratch.join("vendor/patches"))
        .expect("patches")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.get(..4)?.parse::<usize>().ok()
        })
        .max()
        .unwrap_or(0);
    let wrong = format!("{:04}-skipped", count + 2);
    assert!(!run(&scratch, "bash", &[script, "--record", &wrong])
        .status
        .success());
    let next = format!("{:04}-test-change", count + 1);
    let recorded = run(&scratch, "bash", &[script, "--record", &next]);
    assert!(recorded.status.success(), "{}", text(&recorded));
    let patch = fs::read_to_string(scratch.join(format!("vendor/patches/{next}.patch")))
        .expect("the recorded patch");
    assert!(
        patch.contains("+// changed") && patch.contains("b/src/added.rs"),
        "{patch}"
    );
    assert!(check().status.success(), "{}", text(&check()));

    // Nothing left to record.
    let again = format!("{:04}-nothing", count + 2);
    assert!(!run(&scratch, "bash", &[script, "--record", &again])
        .status
        .success());
    fs::remove_dir_all(&scratch).expect("remove the scratch copy");
}
