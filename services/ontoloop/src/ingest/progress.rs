//! How far a run is, on stderr: on a terminal an indicatif progress bar (files read of the total,
//! pushed, unchanged, failed, the rate and the time left, then the run's events applied);
//! elsewhere a plain line every few seconds, so a log shows a long run moving without a line per
//! file.

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain line is written when stderr is no terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// The terminal bar: position of length, the counts, the rate and the time left.
const BAR: &str = "ingest: [{bar:30}] {pos}/{len} {msg}; {per_sec}, about {eta} left";

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
    /// On a terminal.
    bar: Option<ProgressBar>,
    enabled: bool,
}

impl Progress {
    /// A display of a run over `total` items called `what` (files, file versions); silent when
    /// not `enabled`.
    pub fn new(total: usize, what: &'static str, enabled: bool) -> Self {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(BAR) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        });
        Self {
            total,
            what,
            started: Instant::now(),
            last: None,
            bar,
            enabled,
        }
    }

    /// Shows `counts`: on the bar at once (it redraws at its own pace), as a plain line unless
    /// one was written too recently.
    pub fn update(&mut self, counts: Counts) {
        if !self.enabled {
            return;
        }
        if let Some(bar) = &self.bar {
            bar.set_position(counts.read as u64);
            bar.set_message(self.counts(counts));
            return;
        }
        let now = Instant::now();
        match self.last {
            Some(last) if now.duration_since(last) < PLAIN_EVERY => {}
            // The first plain line waits for a run long enough to need one.
            None => self.last = Some(now),
            Some(_) => {
                self.last = Some(now);
                self.plain(&self.line(counts));
            }
        }
    }

    /// Whether anything is shown (a run too short for a plain line waits silently too).
    pub fn shown(&self) -> bool {
        self.enabled && (self.bar.is_some() || self.last.is_some())
    }

    /// Says every push is acknowledged and the run waits for event `seq` to be applied, with
    /// `applied` of the run's events applied so far where known.
    pub fn waiting(&mut self, counts: Counts, seq: u64, applied: Option<(usize, usize)>) {
        if !self.shown() {
            return;
        }
        let waiting = match applied {
            Some((applied, events)) => {
                format!("{applied}/{events} events applied, waiting for event {seq}")
            }
            None => format!("waiting for the analyst to apply event {seq}"),
        };
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}; {waiting}", self.counts(counts)));
            return;
        }
        let now = Instant::now();
        if applied.is_some()
            && self
                .last
                .is_some_and(|l| now.duration_since(l) < PLAIN_EVERY)
        {
            return;
        }
        self.last = Some(now);
        self.plain(&format!("{}; {waiting}", self.line(counts)));
    }

    /// Writes `line` after the last.
    fn plain(&self, line: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
        let _ = err.flush();
    }

    /// Clears the bar (the summary follows).
    pub fn finish(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// The counts but the position: what the bar says beside it.
    fn counts(&self, counts: Counts) -> String {
        format!(
            "{} read, {} pushed, {} unchanged, {} failed",
            self.what, counts.pushed, counts.unchanged, counts.failed
        )
    }

    /// A plain line: the position, the counts, the rate and the time left.
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
            "ingest: {}/{} {}; {rate:.0}/s{eta}",
            counts.read,
            self.total,
            self.counts(counts)
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
