//! How far a run is, on stderr: on a terminal one line redrawn in place (files read of the total,
//! pushed, unchanged, failed, the rate and the time left); elsewhere a plain line every few
//! seconds, so a log shows a long run moving without a line per file.

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

/// How often the terminal line is redrawn.
const REDRAW: Duration = Duration::from_millis(100);

/// How often a plain line is written when stderr is no terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Counts of a run so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Files (or file versions) looked at.
    pub read: usize,
    /// Pages pushed.
    pub pushed: usize,
    /// Pages unchanged since the last run.
    pub unchanged: usize,
    /// Files that could not be read or pushed.
    pub failed: usize,
}

/// The progress display of one run.
pub struct Progress {
    total: usize,
    what: &'static str,
    started: Instant,
    last: Option<Instant>,
    terminal: bool,
    enabled: bool,
}

impl Progress {
    /// A display of a run over `total` items called `what` (files, file versions); silent when
    /// not `enabled`.
    pub fn new(total: usize, what: &'static str, enabled: bool) -> Self {
        Self {
            total,
            what,
            started: Instant::now(),
            last: None,
            terminal: std::io::stderr().is_terminal(),
            enabled,
        }
    }

    /// Shows `counts`, unless shown too recently.
    pub fn update(&mut self, counts: Counts) {
        if !self.enabled {
            return;
        }
        let every = if self.terminal { REDRAW } else { PLAIN_EVERY };
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < every)
        {
            return;
        }
        if self.last.is_none() && !self.terminal {
            // The first plain line waits for a run long enough to need one.
            self.last = Some(now);
            return;
        }
        self.last = Some(now);
        self.show(&self.line(counts));
    }

    /// Says every push is acknowledged and the run waits for event `seq` to be applied.
    pub fn waiting(&mut self, counts: Counts, seq: u64) {
        if !self.enabled || self.last.is_none() {
            // A run too short to have shown progress waits silently too.
            return;
        }
        self.show(&format!(
            "{}; waiting for the analyst to apply event {seq}",
            self.line(counts)
        ));
    }

    /// Writes `line`: in place of the last on a terminal, after it elsewhere.
    fn show(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// Clears the terminal line (the summary follows).
    pub fn finish(&mut self) {
        if self.enabled && self.terminal && self.last.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    fn line(&self, counts: Counts) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            counts.read as f64 / elapsed
        } else {
            0.0
        };
        let left = self.total.saturating_sub(counts.read);
        let eta = if rate > 0.0 && left > 0 {
            format!(", about {} left", duration(left as f64 / rate))
        } else {
            String::new()
        };
        format!(
            "ingest: {}/{} {} read, {} pushed, {} unchanged, {} failed; {rate:.0}/s{eta}",
            counts.read, self.total, self.what, counts.pushed, counts.unchanged, counts.failed
        )
    }
}

/// `seconds` as `42s` or `3m05s`.
fn duration(seconds: f64) -> String {
    let whole = seconds.ceil() as u64;
    if whole < 60 {
        format!("{whole}s")
    } else {
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_says_how_far_and_how_fast() {
        let progress = Progress::new(100, "files", true);
        let line = progress.line(Counts {
            read: 10,
            pushed: 8,
            unchanged: 1,
            failed: 1,
        });
        assert!(
            line.starts_with("ingest: 10/100 files read, 8 pushed, 1 unchanged, 1 failed; "),
            "{line}"
        );
        assert_eq!(duration(4.2), "5s");
        assert_eq!(duration(185.0), "3m05s");
    }
}
