//! `iwarp fuzz-peer`: a hostile iWARP peer pointed at another stack.
//!
//! Catalogue mode (the default) plays every case of the `hostile`
//! catalogue on fresh connections, judges what came back against what
//! RFC 5040/5041/5044/6581 assign, and after each case checks with a
//! legitimate rping ping that the target still serves. Mutation mode
//! (`--mutate`) plays seeded, structure-aware mutants of a valid session
//! instead, and minimizes and saves any that leave the target down.
//! `--replay` plays a saved mutant again.
//!
//! Every run is bounded (`--budget`, `--time-limit`) and only talks to the
//! one address it is given (or, with `--listen`, to whoever connects).

mod mutation;
mod report;
mod runner;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hostile::transcript::Transcript;
use hostile::{mutate, Case, Step, Target};
use mpa::InitiatorConfig;

use super::transport_args::TransportArgs;
use report::{Report, Row, Verdict};
use runner::{Role, Runner};

/// Exit status when a case failed or the target went down.
const EXIT_FAILED: u8 = 1;
/// Exit status when the run could not start (no target, bad flags).
const EXIT_SETUP: u8 = 2;

/// A hostile iWARP peer: plays the robustness catalogue (or seeded
/// mutants) against another implementation and judges its answers.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The target, an iWARP listener (say an rping server).
    #[arg(value_name = "HOST:PORT", required_unless_present_any = ["listen", "list"])]
    target: Option<String>,
    /// Face an iWARP client instead: listen on this port and play the
    /// cases as the Responder to each connection it opens.
    #[arg(long, value_name = "PORT", conflicts_with = "target")]
    listen: Option<u16>,
    /// List the cases (with --listen: the Responder's) and exit.
    #[arg(long)]
    list: bool,
    /// Only these cases (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAME[,NAME]")]
    cases: Vec<String>,
    /// Leave these cases out (comma-separated names): say the idle flood,
    /// to run it last and on its own.
    #[arg(long, value_delimiter = ',', value_name = "NAME[,NAME]")]
    skip: Vec<String>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the pcap of every non-passing case (and minimized mutant) here.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Most cases (catalogue) or mutants (mutation mode) to run.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    budget: u64,
    /// Start nothing new after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1800.0)]
    time_limit: f64,
    /// Mutation mode: seeded mutants of a valid session.
    #[arg(long, conflicts_with = "replay")]
    mutate: bool,
    /// Seed of the mutants.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Mutants to play (bounded by --budget too).
    #[arg(long, value_name = "N", default_value_t = 100)]
    iterations: u64,
    /// Mutation mode: start from the first connection of this capture
    /// (pcap or pcapng) instead of a session built here.
    #[arg(long, value_name = "FILE", requires = "mutate")]
    from_capture: Option<PathBuf>,
    /// Play the client stream of this capture (a saved mutant) again, then
    /// check the target still serves.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// How long the target waits for an MPA Request (siw: 10 s); the
    /// silent cases outwait it.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    target_timeout: f64,
    /// How long the target may take to answer a case.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    answer_within: f64,
    /// Connections of the idle flood.
    #[arg(long, value_name = "N", default_value_t = 200)]
    flood: usize,
    /// Milliseconds to wait after start-up before the first FPDU (siw
    /// overlooks one that comes moments after its Reply).
    #[arg(long, value_name = "MS", default_value_t = 20)]
    settle_ms: u64,
    /// With --listen: how long to wait for the target's next connection.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    accept_timeout: f64,
    /// Print each case or mutant as it is played.
    #[arg(short = 'v')]
    verbose: bool,
    #[command(flatten)]
    transport: TransportArgs,
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

impl Args {
    /// What the cases know of the target's policy.
    fn target_policy(&self) -> Target {
        let t = &self.transport;
        let rtr = t.rtr_set();
        Target {
            mpa: InitiatorConfig {
                rev: t.mpa_rev,
                crc: t.crc.policy(),
                markers_rx: t.markers,
                peer_to_peer: (!rtr.is_empty()).then_some(rtr),
                ..InitiatorConfig::default()
            },
            request_timeout: secs(self.target_timeout),
            answer_within: secs(self.answer_within),
            flood: self.flood,
            seed: self.seed,
        }
    }

    /// The command line that plays the same target with the same policy.
    fn replay_prefix(&self) -> String {
        let mut s = String::from("iwarp fuzz-peer");
        if let Some(t) = &self.target {
            s.push(' ');
            s.push_str(t);
        }
        let t = &self.transport;
        if let (Some(tap), Some(ip)) = (&t.tap, t.ip) {
            s.push_str(&format!(" --tap {tap} --ip {ip}"));
            if let Some(ns) = &t.netns {
                s.push_str(&format!(" --netns {ns}"));
            }
        }
        s.push_str(&format!(
            " --crc {} --mpa-rev {}",
            format!("{:?}", t.crc).to_lowercase(),
            t.mpa_rev
        ));
        if !t.p2p.is_empty() {
            let kinds: Vec<String> = t
                .p2p
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect();
            s.push_str(&format!(" --p2p {}", kinds.join(",")));
        }
        if t.markers {
            s.push_str(" --markers");
        }
        s
    }
}

pub fn run(args: &Args) -> ExitCode {
    let target = args.target_policy();
    if args.list {
        let cases = if args.listen.is_some() {
            hostile::responder_catalogue(&target)
        } else {
            hostile::catalogue(&target)
        };
        for c in cases {
            println!("{:28} {}", c.name, c.about);
        }
        return ExitCode::SUCCESS;
    }
    match run_checked(args, target) {
        Ok(report) => {
            if args.json {
                println!("{}", report.json());
            } else {
                print!("{}", report.table());
            }
            if report.failed() > 0 {
                ExitCode::from(EXIT_FAILED)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("fuzz-peer: {e}");
            ExitCode::from(EXIT_SETUP)
        }
    }
}

fn resolve(s: &str) -> Result<SocketAddr, String> {
    s.to_socket_addrs()
        .map_err(|e| format!("{s}: {e}"))?
        .find(SocketAddr::is_ipv4)
        .ok_or_else(|| format!("{s}: no IPv4 address"))
}

fn run_checked(args: &Args, target: Target) -> Result<Report, String> {
    let until = Instant::now() + secs(args.time_limit);
    let bind = match (args.listen, args.transport.ip) {
        (Some(_), Some(ip)) => Some(IpAddr::V4(ip.addr)),
        (Some(_), None) => Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        (None, _) => None,
    };
    let mut t = args.transport.open_transport(bind)?;
    let (role, target_name) = match (args.listen, &args.target) {
        (Some(port), _) => {
            let l = t.listen(port).map_err(|e| format!("listen {port}: {e}"))?;
            (Role::Listen(l), format!("clients of port {port}"))
        }
        (None, Some(s)) => {
            let a = resolve(s)?;
            (Role::Connect(a), a.to_string())
        }
        (None, None) => return Err("a HOST:PORT or --listen PORT is needed".into()),
    };
    let mut runner = Runner {
        t,
        role,
        target,
        settle: Duration::from_millis(args.settle_ms),
        accept_within: secs(args.accept_timeout),
    };
    let mut report = Report {
        target: format!("{target_name} ({})", args.transport.describe()),
        mode: if args.replay.is_some() {
            "replay".into()
        } else if args.mutate {
            "mutation".into()
        } else {
            "catalogue".into()
        },
        ..Report::default()
    };
    // A target that does not serve a legitimate ping to begin with cannot
    // be judged on anything.
    let first = runner.alive();
    if !first.alive {
        return Err(format!(
            "the target does not serve a legitimate rping exchange: {}",
            first.detail
        ));
    }
    if let Some(path) = &args.replay {
        replay(&mut runner, path, &mut report)?;
    } else if args.mutate {
        let base = match &args.from_capture {
            Some(p) => session_from_capture(&runner.target, p)?,
            None => mutate::base_session(&runner.target),
        };
        if runner.responder() {
            return Err("mutation mode plays the Initiator: give HOST:PORT, not --listen".into());
        }
        mutation::run(
            &mut runner,
            &base,
            args.seed,
            args.iterations.min(args.budget),
            until,
            args.out.as_deref(),
            &args.replay_prefix(),
            &mut report,
            args.verbose,
        );
    } else {
        catalogue(args, &mut runner, until, &mut report)?;
    }
    Ok(report)
}

fn catalogue(
    args: &Args,
    r: &mut Runner,
    until: Instant,
    report: &mut Report,
) -> Result<(), String> {
    let all = if r.responder() {
        hostile::responder_catalogue(&r.target)
    } else {
        hostile::catalogue(&r.target)
    };
    for name in args.cases.iter().chain(&args.skip) {
        if !all.iter().any(|c| c.name == name) {
            return Err(format!("no case called {name:?} (see --list)"));
        }
    }
    let cases: Vec<Case> = all
        .into_iter()
        .filter(|c| args.cases.is_empty() || args.cases.iter().any(|n| n == c.name))
        .filter(|c| !args.skip.iter().any(|n| n == c.name))
        .collect();
    let mut down = false;
    for (i, case) in cases.iter().enumerate() {
        let skip = if down {
            Some("the target stopped serving")
        } else if i as u64 >= args.budget {
            Some("over the case budget")
        } else if Instant::now() >= until {
            Some("over the time limit")
        } else {
            None
        };
        if let Some(why) = skip {
            report
                .rows
                .push(row(case, Verdict::Skipped, String::new(), None, why.into()));
            continue;
        }
        if args.verbose {
            eprintln!("playing {}", case.name);
        }
        let t0 = Instant::now();
        let (rep, transcripts) = match r.play(case) {
            Ok(x) => x,
            Err(e) => {
                down = true;
                let mut row = row(case, Verdict::Fail, String::new(), Some(false), e);
                row.elapsed = t0.elapsed();
                report.rows.push(row);
                continue;
            }
        };
        let live = r.alive();
        let observed = summarize(&rep);
        let mut note = rep.failure().unwrap_or_default();
        if !live.alive {
            down = true;
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str(&live.detail);
        }
        let verdict = if rep.passed() && live.alive {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        let pcap = if verdict == Verdict::Pass {
            None
        } else {
            // The first connection that missed, or the first.
            let at = rep.verdicts.iter().position(Result::is_err).unwrap_or(0);
            let p = args
                .out
                .as_deref()
                .and_then(|d| save_pcap(d, case.name, transcripts.get(at)?));
            if let (Some(d), Some(t)) = (args.out.as_deref(), live.transcript.as_ref()) {
                if !live.alive {
                    save_pcap(d, &format!("{}-liveness", case.name), t);
                }
            }
            p
        };
        let mut row = row(case, verdict, observed, Some(live.alive), note);
        row.pcap = pcap;
        row.elapsed = t0.elapsed();
        report.rows.push(row);
    }
    Ok(())
}

/// What the case's connections saw: the first one's observation, and
/// for a flood how many met the expectation.
fn summarize(rep: &hostile::driver::Report) -> String {
    let first = rep
        .observations
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let handshake = if rep.unconnected > 0 {
        format!(" ({} never completed the TCP handshake)", rep.unconnected)
    } else {
        String::new()
    };
    if rep.verdicts.len() > 1 {
        let ok = rep.verdicts.iter().filter(|v| v.is_ok()).count();
        format!(
            "{ok} of {} connection(s) as expected{handshake}; first: {first}",
            rep.verdicts.len()
        )
    } else {
        format!("{first}{handshake}")
    }
}

fn row(case: &Case, verdict: Verdict, observed: String, alive: Option<bool>, note: String) -> Row {
    Row {
        name: case.name.to_string(),
        about: case.about.to_string(),
        expected: case.expect.to_string(),
        observed,
        verdict,
        alive,
        note,
        pcap: None,
        elapsed: Duration::ZERO,
    }
}

/// Writes `t` as `DIR/NAME.pcap`; the path, or `None` if it could not be
/// written (said on stderr).
pub(crate) fn save_pcap(dir: &Path, name: &str, t: &Transcript) -> Option<PathBuf> {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let path = dir.join(format!("{name}.pcap"));
    let res = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, t.to_pcap(wall)));
    match res {
        Ok(()) => Some(path),
        Err(e) => {
            eprintln!("fuzz-peer: cannot write {}: {e}", path.display());
            None
        }
    }
}

fn read_streams(path: &Path) -> Result<[Vec<u8>; 2], String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Transcript::streams_from_pcap(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn session_from_capture(t: &Target, path: &Path) -> Result<Vec<Step>, String> {
    let [c, s] = read_streams(path)?;
    mutate::session_from_streams(t, &c, &s).ok_or_else(|| {
        format!(
            "{}: its first connection does not start with an MPA Request and Reply",
            path.display()
        )
    })
}

/// Plays a saved client stream again: its MPA Request, the target's
/// Reply awaited, then everything after it.
fn replay(r: &mut Runner, path: &Path, report: &mut Report) -> Result<(), String> {
    if r.responder() {
        return Err("a replay plays the Initiator: give HOST:PORT, not --listen".into());
    }
    let [client, _] = read_streams(path)?;
    if client.is_empty() {
        return Err(format!("{}: no client bytes to replay", path.display()));
    }
    let split = mpa::wire::FrameRepr::parse_bytes(&client).map_or(client.len(), |(_, n)| n);
    let (request, rest) = client.split_at(split);
    let mut script = vec![Step::Bytes(request.to_vec())];
    if !rest.is_empty() {
        script.push(Step::AwaitReply);
        script.push(Step::Bytes(rest.to_vec()));
    }
    let case = Case {
        name: "replay",
        about: "a saved client stream, played again",
        script,
        expect: hostile::Expectation::any_of(&[]),
        patience: r.target.answer_within,
        connections: 1,
    };
    let t0 = Instant::now();
    let (rep, _) = r.play(&case)?;
    let live = r.alive();
    let mut c = row(
        &case,
        if live.alive {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        summarize(&rep),
        Some(live.alive),
        live.detail,
    );
    c.expected = "the target still serving afterwards".into();
    c.about = format!("{} ({})", case.about, path.display());
    c.elapsed = t0.elapsed();
    report.rows.push(c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        let mut v = vec!["fuzz-peer"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).map(|c| c.a)
    }

    #[test]
    fn the_policy_flags_shape_the_target_and_the_replay_command() {
        let a = parse(&[
            "10.0.0.2:7174",
            "--crc",
            "required",
            "--mpa-rev",
            "1",
            "--p2p",
            "write,read",
            "--target-timeout",
            "3",
        ])
        .unwrap();
        let t = a.target_policy();
        assert_eq!((t.mpa.rev, t.mpa.crc), (1, mpa::CrcPolicy::Required));
        assert!(t
            .mpa
            .peer_to_peer
            .is_some_and(|s| s.write && s.read && !s.send));
        assert_eq!(t.request_timeout, Duration::from_secs(3));
        assert_eq!(
            a.replay_prefix(),
            "iwarp fuzz-peer 10.0.0.2:7174 --crc required --mpa-rev 1 --p2p write,read"
        );
    }

    #[test]
    fn a_target_or_a_listener_is_needed_but_not_both() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["--listen", "7174"]).is_ok());
        assert!(parse(&["--list"]).is_ok());
        assert!(parse(&["10.0.0.2:7174", "--listen", "7174"]).is_err());
        assert!(parse(&["10.0.0.2:7174", "--mutate", "--replay", "x.pcap"]).is_err());
        assert!(parse(&["10.0.0.2:7174", "--from-capture", "x.pcap"]).is_err());
    }
}
