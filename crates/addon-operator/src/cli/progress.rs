//! Progress of long commands (`check`, `test`, `module render`) on stderr: one line redrawn in
//! place while stderr is a terminal, and nothing at all when it is not (a pipe, a file, CI logs).

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the line is redrawn when nothing else changes it (the spinner and elapsed time).
const TICK: Duration = Duration::from_millis(120);

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// What the line says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    phase: String,
    done: usize,
    total: Option<usize>,
    frame: usize,
}

/// The line for `state` after `elapsed`, without control characters.
fn line(label: &str, state: &State, elapsed: Duration) -> String {
    let spinner = SPINNER[state.frame % SPINNER.len()];
    let count = match state.total {
        Some(total) => format!(" {}/{total}", state.done),
        None => String::new(),
    };
    let phase = if state.phase.is_empty() {
        String::new()
    } else {
        format!(" {}", state.phase)
    };
    format!(
        "{spinner} {label}:{phase}{count} ({:.1}s)",
        elapsed.as_secs_f64()
    )
}

struct Shared {
    label: &'static str,
    started: Instant,
    state: Mutex<State>,
    out: Mutex<Box<dyn Write + Send>>,
    stopped: AtomicBool,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Clears the terminal line and writes the current one; the cursor goes back to its start,
    /// so that a log line written meanwhile overwrites it instead of following it.
    fn draw(&self) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        let text = line(self.label, &self.state(), self.started.elapsed());
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = write!(out, "\r\x1b[2K{text}\r");
        let _ = out.flush();
    }

    fn clear(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = write!(out, "\r\x1b[2K");
        let _ = out.flush();
    }
}

/// A progress line; inert (writes nothing, starts no thread) unless stderr is a terminal.
/// Cloning shares the line. The line is cleared when the last clone is dropped or on `finish`.
#[derive(Clone)]
pub struct Progress {
    shared: Option<Arc<Shared>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("active", &self.shared.is_some())
            .finish()
    }
}

impl Progress {
    /// The progress of `label` (the command) on stderr, when stderr is a terminal.
    pub fn on_stderr(label: &'static str) -> Self {
        if std::io::stderr().is_terminal() {
            Self::to_writer(label, Box::new(std::io::stderr()))
        } else {
            Self::hidden()
        }
    }

    /// A progress that shows nothing (library callers, tests).
    pub fn hidden() -> Self {
        Self { shared: None }
    }

    /// A progress line written to `out` whatever it is (tests).
    fn to_writer(label: &'static str, out: Box<dyn Write + Send>) -> Self {
        let shared = Arc::new(Shared {
            label,
            started: Instant::now(),
            state: Mutex::new(State::default()),
            out: Mutex::new(out),
            stopped: AtomicBool::new(false),
        });
        let ticking = Arc::downgrade(&shared);
        // a plain thread: the commands block their own runtime's threads at times (hook --config)
        let _ = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                while let Some(shared) = ticking.upgrade() {
                    if shared.stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    shared.state().frame += 1;
                    shared.draw();
                    drop(shared);
                    std::thread::sleep(TICK);
                }
            });
        Self {
            shared: Some(shared),
        }
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        if let Some(shared) = &self.shared {
            change(&mut shared.state());
            shared.draw();
        }
    }

    /// What the command does now; resets the count.
    pub fn phase(&self, phase: impl Into<String>) {
        let phase = phase.into();
        self.update(|s| {
            s.phase = phase;
            s.done = 0;
            s.total = None;
        });
    }

    /// The phase counts `total` items (shown as `done/total`).
    pub fn total(&self, total: usize) {
        self.update(|s| s.total = Some(total));
    }

    /// One more item of the phase is done.
    pub fn inc(&self) {
        self.update(|s| s.done += 1);
    }

    /// Clears the line (before the command prints its result).
    pub fn finish(&self) {
        if let Some(shared) = &self.shared {
            shared.clear();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer tests can read back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    #[test]
    fn the_line_shows_the_phase_the_count_and_the_time() {
        let state = State {
            phase: "cases".into(),
            done: 3,
            total: Some(8),
            frame: 1,
        };
        let text = line("test", &state, Duration::from_millis(2500));
        assert_eq!(text, "⠙ test: cases 3/8 (2.5s)");
        let text = line("check", &State::default(), Duration::ZERO);
        assert_eq!(text, "⠋ check: (0.0s)");
    }

    #[test]
    fn each_change_redraws_the_line_and_finish_clears_it() {
        let buffer = Buffer::default();
        let progress = Progress::to_writer("test", Box::new(buffer.clone()));
        progress.phase("running the cases");
        progress.total(2);
        progress.inc();
        progress.inc();
        progress.finish();
        let text = buffer.text();
        assert!(text.contains("test: running the cases 2/2 ("), "{text:?}");
        assert!(text.ends_with("\r\x1b[2K"), "{text:?}");
        let cleared = text.len();
        progress.inc();
        std::thread::sleep(TICK * 2);
        assert_eq!(buffer.text().len(), cleared, "nothing after finish");
    }

    #[test]
    fn without_a_terminal_nothing_is_written() {
        // the test harness captures stderr: not a terminal
        let progress = Progress::on_stderr("test");
        assert!(progress.shared.is_none() || std::io::stderr().is_terminal());
    }
}
