//! The eight fuzz targets of `fuzz/fuzz_targets/`, callable from tests: each
//! runs exactly the function its cargo-fuzz one-liner calls.

use std::fmt;

/// A fuzz target, named as its file in `fuzz/fuzz_targets/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    MpaStartup,
    MpaDeframer,
    DdpHeaders,
    DdpPlacement,
    RdmapHeaders,
    RdmapConnection,
    RdmapRfc7306,
    VerbsEngine,
}

impl Target {
    pub const ALL: [Target; 8] = [
        Target::MpaStartup,
        Target::MpaDeframer,
        Target::DdpHeaders,
        Target::DdpPlacement,
        Target::RdmapHeaders,
        Target::RdmapConnection,
        Target::RdmapRfc7306,
        Target::VerbsEngine,
    ];

    /// The target's name: its cargo-fuzz binary and corpus directory.
    pub const fn name(self) -> &'static str {
        match self {
            Target::MpaStartup => "mpa_startup",
            Target::MpaDeframer => "mpa_deframer",
            Target::DdpHeaders => "ddp_headers",
            Target::DdpPlacement => "ddp_placement",
            Target::RdmapHeaders => "rdmap_headers",
            Target::RdmapConnection => "rdmap_connection",
            Target::RdmapRfc7306 => "rdmap_rfc7306",
            Target::VerbsEngine => "verbs_engine",
        }
    }

    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The function the target's one-liner calls (and [`Target::run`] too).
    pub const fn function(self) -> &'static str {
        match self {
            Target::MpaStartup => "mpa::fuzzing::startup",
            Target::MpaDeframer => "mpa::fuzzing::deframer",
            Target::DdpHeaders => "ddp::fuzzing::headers",
            Target::DdpPlacement => "ddp::fuzzing::placement",
            Target::RdmapHeaders => "rdmap::fuzzing::headers",
            Target::RdmapConnection => "rdmap::fuzzing::connection",
            Target::RdmapRfc7306 => "rdmap::fuzzing::rfc7306",
            Target::VerbsEngine => "verbs::fuzzing::engine",
        }
    }

    /// Runs the target's property checks on `data`; panics when one fails,
    /// as the fuzzer would report it.
    pub fn run(self, data: &[u8]) {
        match self {
            Target::MpaStartup => mpa::fuzzing::startup(data),
            Target::MpaDeframer => mpa::fuzzing::deframer(data),
            Target::DdpHeaders => ddp::fuzzing::headers(data),
            Target::DdpPlacement => ddp::fuzzing::placement(data),
            Target::RdmapHeaders => rdmap::fuzzing::headers(data),
            Target::RdmapConnection => rdmap::fuzzing::connection(data),
            Target::RdmapRfc7306 => rdmap::fuzzing::rfc7306(data),
            Target::VerbsEngine => verbs::fuzzing::engine(data),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
