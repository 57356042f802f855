//! Random frame loss inside a network namespace with nftables: this
//! machine's kernels need not have netem, and nftables' `numgen random`
//! drops each packet independently, which is what the memory link does.
//!
//! Both places drop in a forward path, where a drop is a network loss: the
//! forward hook of a router namespace (the Linux baseline: every packet
//! crosses it once, in either direction) and of a bridge (the TAP
//! transport, whose two hosts sit behind one bridge). A drop on a host's
//! own output hook would not be one: the kernel sends the segment again on
//! its next transmit.

use std::io::Write;
use std::process::{Command, Stdio};

/// `numgen random mod RESOLUTION`: loss rates down to one in a million.
const RESOLUTION: u32 = 1_000_000;

/// Where the drop rule hooks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hook {
    /// TCP packets this namespace routes between its interfaces (`inet`
    /// family).
    Forward,
    /// TCP frames a bridge in this namespace forwards (`bridge` family).
    BridgeForward,
}

/// The threshold `numgen random mod RESOLUTION lt N` for `loss` (a
/// fraction).
fn threshold(loss: f64) -> u32 {
    (loss.clamp(0.0, 1.0) * f64::from(RESOLUTION)).round() as u32
}

/// An nft script that drops TCP packets at `loss` (a fraction) at `hook`.
pub(crate) fn ruleset(hook: Hook, loss: f64) -> String {
    let (family, chain_hook, proto) = match hook {
        Hook::Forward => ("inet", "forward", "meta l4proto tcp"),
        Hook::BridgeForward => ("bridge", "forward", "ip protocol tcp"),
    };
    format!(
        "table {family} iwarp_loss {{\n\
         \tchain lossy {{\n\
         \t\ttype filter hook {chain_hook} priority 0; policy accept;\n\
         \t\t{proto} numgen random mod {RESOLUTION} lt {} drop\n\
         \t}}\n\
         }}\n",
        threshold(loss)
    )
}

/// Loads the drop rule into namespace `ns` (`ip netns exec NS nft -f -`).
/// The table goes away with the namespace.
pub(crate) fn install(ns: &str, hook: Hook, loss: f64) -> Result<(), String> {
    let script = ruleset(hook, loss);
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ip netns exec nft: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("nft: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("nft: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "nft in {ns} failed (it needs nftables and root): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_maps_to_parts_per_million() {
        assert_eq!(threshold(0.01), 10_000);
        assert_eq!(threshold(0.001), 1_000);
        assert_eq!(threshold(0.123_456_7), 123_457);
        assert_eq!(threshold(0.0), 0);
        assert_eq!(threshold(2.0), RESOLUTION);
    }

    #[test]
    fn rules_name_their_family_and_hook() {
        let out = ruleset(Hook::Forward, 0.05);
        assert!(out.starts_with("table inet iwarp_loss"), "{out}");
        assert!(out.contains("hook forward priority 0"), "{out}");
        assert!(
            out.contains("meta l4proto tcp numgen random mod 1000000 lt 50000 drop"),
            "{out}"
        );
        let br = ruleset(Hook::BridgeForward, 0.01);
        assert!(br.starts_with("table bridge iwarp_loss"), "{br}");
        assert!(br.contains("hook forward priority 0"), "{br}");
        assert!(br.contains("ip protocol tcp numgen random mod 1000000 lt 10000 drop"));
    }
}
