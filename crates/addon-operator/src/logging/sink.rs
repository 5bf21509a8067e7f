//! A lossy, non-blocking log writer: lines go through a bounded queue to a writer thread, so a
//! closed, broken or stalled stderr drops lines instead of blocking or aborting the operator.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{Duration, Instant};

use tracing_subscriber::fmt::MakeWriter;

/// Lines waiting for the writer thread before new ones are dropped.
pub const QUEUE_LINES: usize = 4096;

/// The sending side shared by every log call; cheap to clone.
#[derive(Clone)]
pub struct Sink {
    tx: SyncSender<Vec<u8>>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    written: AtomicU64,
    dropped: AtomicU64,
}

impl Sink {
    /// Starts the writer thread over `out` (stderr in the binary). Without a thread (the system
    /// refused one) every line is dropped, which is still better than blocking.
    pub fn spawn(out: impl Write + Send + 'static, capacity: usize) -> Self {
        let (tx, rx) = sync_channel(capacity);
        let counters = Arc::new(Counters::default());
        let thread_counters = Arc::clone(&counters);
        let _ = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(rx, out, &thread_counters));
        Self { tx, counters }
    }

    /// Queues one formatted line; drops it when the queue is full or the writer is gone.
    pub fn send(&self, line: &[u8]) {
        match self.tx.try_send(line.to_vec()) {
            Ok(()) => {
                self.counters.queued.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Lines dropped so far because the output could not keep up.
    pub fn dropped(&self) -> u64 {
        self.counters.dropped.load(Ordering::Relaxed)
    }

    /// Waits until every queued line was handed to the output, at most `limit`.
    /// Returns whether the queue drained.
    pub fn flush(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let queued = self.counters.queued.load(Ordering::Relaxed);
            if self.counters.written.load(Ordering::Relaxed) >= queued {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// The writer thread: every line is written once; write errors (closed or broken output) are
/// ignored so the queue keeps draining.
fn write_lines(rx: Receiver<Vec<u8>>, mut out: impl Write, counters: &Counters) {
    for line in rx {
        let _ = out.write_all(&line);
        let _ = out.flush();
        counters.written.fetch_add(1, Ordering::Relaxed);
    }
}

/// One log call's writer: tracing-subscriber writes each formatted event with one `write_all`.
pub struct SinkWriter<'a>(&'a Sink);

impl Write for SinkWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.send(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = SinkWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        SinkWriter(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logging::captured::Captured;
    use std::sync::Mutex;

    /// An output that fails every write like a closed pipe.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
    }

    /// An output that never returns until the test ends (a reader that stopped reading).
    struct Stalled(Arc<Mutex<()>>);

    impl Write for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _held = self.0.lock();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_reach_the_output_in_order_and_flush_waits_for_them() {
        let out = Captured::default();
        let sink = Sink::spawn(out.clone(), 16);
        for i in 0..10 {
            sink.send(format!("line {i}\n").as_bytes());
        }
        assert!(sink.flush(Duration::from_secs(10)));
        let text = out.text();
        let expected: String = (0..10).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected);
        assert_eq!(sink.dropped(), 0);
    }

    #[test]
    fn a_broken_output_swallows_lines_without_error() {
        let sink = Sink::spawn(Broken, 4);
        let mut writer = sink.make_writer();
        for _ in 0..100 {
            assert_eq!(writer.write(b"x\n").unwrap(), 2);
        }
        assert!(
            sink.flush(Duration::from_secs(10)),
            "the queue still drains"
        );
    }

    #[test]
    fn a_stalled_output_drops_lines_instead_of_blocking() {
        let gate = Arc::new(Mutex::new(()));
        let held = gate.lock().unwrap();
        let sink = Sink::spawn(Stalled(Arc::clone(&gate)), 4);
        for _ in 0..50 {
            sink.send(b"line\n");
        }
        // one line may be in the writer's hands, four in the queue: the rest were dropped
        assert!(sink.dropped() >= 45, "dropped {}", sink.dropped());
        assert!(!sink.flush(Duration::from_millis(20)), "flush gives up");
        drop(held);
        assert!(sink.flush(Duration::from_secs(10)));
    }
}
