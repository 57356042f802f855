//! The report of a run: one row per case or failing mutant, printed as a
//! table or as JSON, and what the exit status is made of.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use iwarp_decode::json::{quote, Obj};

/// What became of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The target answered as the RFCs assign and kept serving.
    Pass,
    /// It answered otherwise, or stopped serving.
    Fail,
    /// Not run: the budget ran out or the target was down already.
    Skipped,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skipped => "SKIP",
        }
    }
}

/// One row.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: String,
    pub about: String,
    pub expected: String,
    pub observed: String,
    pub verdict: Verdict,
    /// Whether a legitimate exchange afterwards completed (`None`: not checked).
    pub alive: Option<bool>,
    /// Why it failed or was skipped, or what was learned.
    pub note: String,
    /// The capture of a non-passing case.
    pub pcap: Option<PathBuf>,
    pub elapsed: Duration,
}

/// Every row, plus what the run was.
#[derive(Debug, Default)]
pub struct Report {
    pub target: String,
    pub mode: String,
    pub rows: Vec<Row>,
    /// Commands that replay a minimized failing mutant.
    pub replays: Vec<String>,
}

impl Report {
    pub fn failed(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
            .count()
    }

    pub fn passed(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Pass)
            .count()
    }

    pub fn skipped(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Skipped)
            .count()
    }

    /// The table, one case per block: verdict, name, target liveness,
    /// then what was expected and observed.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "fuzz-peer {} against {}", self.mode, self.target);
        let _ = writeln!(
            out,
            "{:<4}  {:<28} {:<6} {:>6}  expected / observed",
            "", "case", "target", "secs"
        );
        for r in &self.rows {
            let alive = match r.alive {
                Some(true) => "alive",
                Some(false) => "DOWN",
                None => "-",
            };
            let _ = writeln!(
                out,
                "{:<4}  {:<28} {:<6} {:>6.1}  expected: {}",
                r.verdict.label(),
                r.name,
                alive,
                r.elapsed.as_secs_f64(),
                r.expected
            );
            let _ = writeln!(out, "{:<48}observed: {}", "", r.observed);
            if r.verdict == Verdict::Fail {
                let _ = writeln!(out, "{:<48}case: {}", "", r.about);
            }
            if !r.note.is_empty() {
                let _ = writeln!(out, "{:<48}note: {}", "", r.note);
            }
            if let Some(p) = &r.pcap {
                let _ = writeln!(out, "{:<48}pcap: {}", "", p.display());
            }
        }
        for cmd in &self.replays {
            let _ = writeln!(out, "replay: {cmd}");
        }
        let _ = writeln!(
            out,
            "fuzz-peer: {} passed, {} failed, {} skipped",
            self.passed(),
            self.failed(),
            self.skipped()
        );
        out
    }

    /// The report as one JSON object.
    pub fn json(&self) -> String {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let mut o = Obj::new()
                    .str("case", &r.name)
                    .str("about", &r.about)
                    .str("expected", &r.expected)
                    .str("observed", &r.observed)
                    .str("verdict", r.verdict.label())
                    .raw("seconds", &format!("{:.3}", r.elapsed.as_secs_f64()));
                o = match r.alive {
                    Some(a) => o.bool("alive", a),
                    None => o.raw("alive", "null"),
                };
                if !r.note.is_empty() {
                    o = o.str("note", &r.note);
                }
                if let Some(p) = &r.pcap {
                    o = o.str("pcap", &p.display().to_string());
                }
                o.finish()
            })
            .collect();
        let mut replays = String::from("[");
        for (i, c) in self.replays.iter().enumerate() {
            if i > 0 {
                replays.push(',');
            }
            quote(&mut replays, c);
        }
        replays.push(']');
        Obj::new()
            .str("target", &self.target)
            .str("mode", &self.mode)
            .num("passed", self.passed() as u64)
            .num("failed", self.failed() as u64)
            .num("skipped", self.skipped() as u64)
            .raw("cases", &format!("[{}]", rows.join(",")))
            .raw("replays", &replays)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, verdict: Verdict) -> Row {
        Row {
            name: name.into(),
            about: "a \"quoted\" thing".into(),
            expected: "Reply, close".into(),
            observed: "no Reply, FIN".into(),
            verdict,
            alive: Some(verdict == Verdict::Pass),
            note: String::new(),
            pcap: None,
            elapsed: Duration::from_millis(1500),
        }
    }

    #[test]
    fn counts_and_json_agree() {
        let r = Report {
            target: "127.0.0.1:7174".into(),
            mode: "catalogue".into(),
            rows: vec![
                row("a", Verdict::Pass),
                row("b", Verdict::Fail),
                row("c", Verdict::Skipped),
            ],
            replays: vec!["iwarp fuzz-peer x --replay y".into()],
        };
        assert_eq!((r.passed(), r.failed(), r.skipped()), (1, 1, 1));
        let j = r.json();
        assert!(j.contains(r#""passed":1,"failed":1,"skipped":1"#), "{j}");
        assert!(j.contains(r#""about":"a \"quoted\" thing""#), "{j}");
        assert!(
            j.contains(r#""replays":["iwarp fuzz-peer x --replay y"]"#),
            "{j}"
        );
        let t = r.table();
        assert!(t.contains("FAIL  b"), "{t}");
        assert!(
            t.ends_with("fuzz-peer: 1 passed, 1 failed, 1 skipped\n"),
            "{t}"
        );
    }
}
