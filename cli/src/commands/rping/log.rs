//! Where rping's lines go: ping data and debug lines on stdout (as rping
//! prints them), notices on stderr; or into memory, for tests.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// The output of one rping run.
#[derive(Debug, Clone, Default)]
pub struct Log {
    debug: bool,
    /// When set, lines are kept here instead of printed.
    captured: Option<Arc<Mutex<Vec<String>>>>,
}

impl Log {
    /// Prints to the terminal; debug lines only when `debug`.
    pub fn stdio(debug: bool) -> Log {
        Log {
            debug,
            captured: None,
        }
    }

    #[cfg(test)]
    /// Keeps every line (debug included when `debug`) for inspection.
    pub fn capture(debug: bool) -> Log {
        Log {
            debug,
            captured: Some(Arc::default()),
        }
    }

    #[cfg(test)]
    /// Lines kept so far (capture mode); stderr lines are prefixed "! ".
    pub fn lines(&self) -> Vec<String> {
        self.captured.as_ref().map_or_else(Vec::new, |c| {
            c.lock().unwrap_or_else(|e| e.into_inner()).clone()
        })
    }

    /// A line of normal output (rping's `printf`).
    pub fn out(&self, line: &str) {
        match &self.captured {
            Some(c) => c
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.to_string()),
            None => {
                let mut o = std::io::stdout().lock();
                // A closed stdout must not stop the pings.
                let _ = writeln!(o, "{line}");
                let _ = o.flush();
            }
        }
    }

    /// A notice or error (rping's `fprintf(stderr, ...)`).
    pub fn err(&self, line: &str) {
        match &self.captured {
            Some(c) => c
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(format!("! {line}")),
            None => eprintln!("{line}"),
        }
    }

    /// A debug line (rping's `DEBUG_LOG`), built only when debugging.
    pub fn debug(&self, line: impl FnOnce() -> String) {
        if self.debug {
            self.out(&line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_lines_in_order_and_debug_only_when_asked() {
        let log = Log::capture(false);
        log.out("a");
        log.debug(|| unreachable!("not built without -d"));
        log.err("b");
        assert_eq!(log.lines(), ["a", "! b"]);
        let log = Log::capture(true);
        log.debug(|| "d".into());
        assert_eq!(log.lines(), ["d"]);
        assert!(Log::stdio(false).lines().is_empty());
    }
}
