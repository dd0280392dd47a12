//! The progress bar of a pass: how far it is, loops/s and the pass rate so far. Drawn only on a
//! terminal, and never with `--quiet`.

use std::io::IsTerminal;
use std::time::Instant;

pub(crate) struct Progress {
    bar: indicatif::ProgressBar,
    started: Instant,
}

impl Progress {
    /// A bar over `total` (called only when the bar is drawn) units of `of` ("the datasets", in
    /// bytes; "the run's rows"), saying what the pass is `doing`.
    pub(crate) fn new(quiet: bool, of: &str, doing: &str, total: impl FnOnce() -> u64) -> Progress {
        let bar = if quiet || !std::io::stderr().is_terminal() {
            indicatif::ProgressBar::hidden()
        } else {
            let bar = indicatif::ProgressBar::new(total().max(1));
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:30}} {{percent:>3}}% of {of} · {doing} · {{msg}} · ETA {{eta}}"
                ))
                .expect("the template is valid"),
            );
            bar.set_message("starting");
            bar
        };
        Progress { bar, started: Instant::now() }
    }

    /// After each chunk taken: the pass is at `position`, with `loops` loops taken and `passed`.
    pub(crate) fn update(&self, position: u64, loops: u64, passed: u64) {
        if self.bar.is_hidden() {
            return;
        }
        self.bar.set_position(position);
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = if loops > 0 { format!("{:.1}%", 100.0 * passed as f64 / loops as f64) } else { "–".into() };
        self.bar.set_message(format!("{loops} loops · {:.0} loops/s · pass rate {rate}", loops as f64 / seconds));
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Prints a line on stderr above the bar, which is drawn again below it.
    pub(crate) fn note(&self, line: &str) {
        self.bar.suspend(|| note!("{line}"));
    }
}
