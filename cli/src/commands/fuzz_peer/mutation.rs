//! Mutation mode: seeded mutants of a valid session, each followed by a
//! liveness check; a mutant after which the target no longer serves is
//! minimized by delta debugging over its mutations and then over its
//! FPDUs, saved as a pcap, and given a replay command.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hostile::mutate::{self, Mutation};
use hostile::transcript::Transcript;
use hostile::{minimize, Answer, Case, End, Expectation, Outcome, Step, Terminate};

use super::report::{Report, Row, Verdict};
use super::runner::Runner;
use super::save_pcap;

/// Tries the minimizer may spend on one failing mutant (each is a case and
/// a liveness check).
const MINIMIZE_TRIES: usize = 24;

/// What a mutant may come to: anything that parses. Mutants are judged on
/// what they leave behind (the liveness check), not on the answer, since
/// which of several faults a target reports first is its choice.
fn anything_well_formed() -> Expectation {
    let mut outcomes = Vec::new();
    for answer in [Answer::None, Answer::Accept, Answer::Reject] {
        for terminate in [Terminate::None, Terminate::AnyKnown] {
            for end in [End::Closed, End::Open] {
                outcomes.push(Outcome {
                    answer,
                    terminate,
                    end,
                });
            }
        }
    }
    Expectation { outcomes }
}

fn mutant_case(script: Vec<Step>, patience: Duration) -> Case {
    Case {
        name: "mutant",
        about: "a mutated session",
        script,
        expect: anything_well_formed(),
        patience,
        connections: 1,
    }
}

/// What running one mutant came to.
struct Outcome1 {
    failed: bool,
    why: String,
    observed: String,
    transcript: Option<Transcript>,
    /// The target stopped serving (not only answered badly).
    down: bool,
}

fn try_mutant(r: &mut Runner, script: Vec<Step>) -> Outcome1 {
    let case = mutant_case(script, r.target.answer_within);
    let (observed, bad_answer, transcript) = match r.play(&case) {
        Ok((rep, mut tr)) => {
            let o = rep
                .observations
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            (o, rep.failure(), tr.pop())
        }
        Err(e) => {
            return Outcome1 {
                failed: true,
                why: format!("cannot connect: {e}"),
                observed: String::new(),
                transcript: None,
                down: true,
            }
        }
    };
    let live = r.alive();
    let (failed, why) = match (&bad_answer, live.alive) {
        (_, false) => (true, live.detail),
        (Some(m), true) => (true, m.clone()),
        (None, true) => (false, String::new()),
    };
    Outcome1 {
        failed,
        why,
        observed,
        transcript,
        down: !live.alive,
    }
}

/// Runs the mutation campaign; rows only for failing mutants, plus one
/// summary row.
#[allow(clippy::too_many_arguments)]
pub fn run(
    r: &mut Runner,
    base: &[Step],
    seed: u64,
    iterations: u64,
    until: Instant,
    out: Option<&Path>,
    replay_prefix: &str,
    report: &mut Report,
    verbose: bool,
) {
    let start = Instant::now();
    let mut ran = 0u64;
    let mut failures = 0u64;
    for i in 0..iterations {
        if Instant::now() >= until {
            break;
        }
        let muts = mutate::generate(base, seed, i);
        let t0 = Instant::now();
        let o = try_mutant(r, mutate::apply(base, &muts));
        ran += 1;
        if verbose {
            eprintln!(
                "iteration {i}: {} -> {}{}",
                mutate::describe(&muts),
                o.observed,
                if o.failed { " FAILED" } else { "" }
            );
        }
        if !o.failed {
            continue;
        }
        failures += 1;
        let (min_muts, min_script, min_out) = minimize_failure(r, base, &muts, o);
        let name = format!("mutant-{seed}-{i}");
        let pcap = save(out, &name, min_out.transcript.as_ref());
        if let Some(p) = &pcap {
            report
                .replays
                .push(format!("{replay_prefix} --replay {}", p.display()));
        }
        report.rows.push(Row {
            name,
            about: format!(
                "iteration {i} of seed {seed}: {} (minimized from {})",
                mutate::describe(&min_muts),
                mutate::describe(&muts)
            ),
            expected: "well-formed answers, and the target still serving".into(),
            observed: min_out.observed.clone(),
            verdict: Verdict::Fail,
            alive: Some(!min_out.down),
            note: format!(
                "{}; {} FPDU step(s) left",
                min_out.why,
                min_script
                    .iter()
                    .filter(|s| matches!(s, Step::Fpdu { .. }))
                    .count()
            ),
            pcap,
            elapsed: t0.elapsed(),
        });
        if min_out.down && !r.alive().alive {
            // Nothing more can be learned from a target that is gone.
            break;
        }
    }
    report.rows.push(Row {
        name: format!("mutation-run-{seed}"),
        about: format!("{ran} mutant(s) of seed {seed}"),
        expected: "every mutant leaves the target serving".into(),
        observed: format!("{failures} mutant(s) did not"),
        verdict: if failures == 0 {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        alive: None,
        note: String::new(),
        pcap: None,
        elapsed: start.elapsed(),
    });
}

/// Delta debugging over the mutations, then over the FPDUs of the
/// minimized mutant; the failing outcome of the smallest that still fails.
fn minimize_failure(
    r: &mut Runner,
    base: &[Step],
    muts: &[Mutation],
    first: Outcome1,
) -> (Vec<Mutation>, Vec<Step>, Outcome1) {
    let mut last: Option<Outcome1> = None;
    let mut tries = 0;
    let min_muts = minimize::ddmin(
        muts,
        |m| {
            tries += 1;
            let o = try_mutant(r, mutate::apply(base, m));
            let f = o.failed;
            if f {
                last = Some(o);
            }
            f
        },
        MINIMIZE_TRIES / 2,
    );
    let script = mutate::apply(base, &min_muts);
    // The FPDU steps, each tried for removal; the rest stays in place.
    let fpdu_at: Vec<usize> = script
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Step::Fpdu { .. }))
        .map(|(i, _)| i)
        .collect();
    let keep = minimize::ddmin(
        &fpdu_at,
        |kept| {
            let s: Vec<Step> = script
                .iter()
                .enumerate()
                .filter(|(i, s)| !matches!(s, Step::Fpdu { .. }) || kept.contains(i))
                .map(|(_, s)| s.clone())
                .collect();
            let o = try_mutant(r, s);
            let f = o.failed;
            if f {
                last = Some(o);
            }
            f
        },
        MINIMIZE_TRIES.saturating_sub(tries),
    );
    let min_script: Vec<Step> = script
        .iter()
        .enumerate()
        .filter(|(i, s)| !matches!(s, Step::Fpdu { .. }) || keep.contains(i))
        .map(|(_, s)| s.clone())
        .collect();
    // The outcome that goes with the final script: run it once more if
    // the last failing try was of a larger one.
    let out = if min_script.len() == script.len()
        && keep.len() == fpdu_at.len()
        && min_muts.len() == muts.len()
    {
        first
    } else {
        let o = try_mutant(r, min_script.clone());
        if o.failed {
            o
        } else {
            last.unwrap_or(first)
        }
    };
    (min_muts, min_script, out)
}

fn save(out: Option<&Path>, name: &str, t: Option<&Transcript>) -> Option<PathBuf> {
    save_pcap(out?, name, t?)
}
