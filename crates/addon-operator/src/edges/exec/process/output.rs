//! Output capture: both pipes read in chunks, stdout captured (bounded) or logged line by line with
//! the hook's fields, the tail of stderr kept for the error message, the rest drained after the
//! exit.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::{LogFields, MAX_CAPTURED_STDOUT, MAX_LINE_BYTES};

/// Longest line of hook output written to the log (upstream truncates at 10000 characters too).
pub(super) const MAX_LOG_LINE: usize = 10_000;

/// How much of stderr is kept for the error message of a failed run.
pub(super) const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Bytes read from a pipe at a time.
pub(super) const READ_CHUNK: usize = 8 * 1024;

/// Bytes of the first read from a pipe (a small allocation; the buffer grows to [`READ_CHUNK`]
/// when a read fills it).
pub(super) const FIRST_READ: usize = 512;

/// After the process exits, how long its output pipes may stay open (held by a background child).
pub(super) const OUTPUT_DRAIN: Duration = Duration::from_secs(1);

/// What a reader task collected: captured stdout, or the tail of stderr.
#[derive(Debug, Default)]
pub(super) struct Collected {
    pub(super) captured: Vec<u8>,
    /// Captured output passed [`MAX_CAPTURED_STDOUT`]; `captured` was dropped.
    pub(super) overflow: bool,
    pub(super) tail: Vec<u8>,
}

impl Collected {
    pub(super) fn capture(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.captured.len() + bytes.len() > MAX_CAPTURED_STDOUT {
            self.overflow = true;
            self.captured = Vec::new();
        } else {
            self.captured.extend_from_slice(bytes);
        }
    }
}

/// One line of output being read: at most [`MAX_LINE_BYTES`] kept, the rest only counted.
#[derive(Debug, Default)]
pub(super) struct Line {
    pub(super) bytes: Vec<u8>,
    pub(super) dropped: usize,
}

impl Line {
    /// Adds `piece` (which holds at most one newline, at its end, not kept); true when the line
    /// is complete.
    pub(super) fn push(&mut self, piece: &[u8]) -> bool {
        let (text, complete) = match piece.strip_suffix(b"\n") {
            Some(text) => (text, true),
            None => (piece, false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(self.bytes.len());
        let kept = room.min(text.len());
        self.bytes.extend_from_slice(&text[..kept]);
        self.dropped += text.len() - kept;
        complete
    }

    pub(super) fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.dropped == 0
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.dropped = 0;
    }
}

/// [`read_lines`] of `pipe`, or nothing when the process has no such pipe.
pub(super) async fn read_pipe<R>(
    pipe: Option<R>,
    stream: &'static str,
    capture: bool,
    log: &LogFields,
    stop: &CancellationToken,
) -> Collected
where
    R: AsyncRead + Unpin,
{
    match pipe {
        Some(pipe) => read_lines(pipe, stream, capture, log, stop).await,
        None => Collected::default(),
    }
}

/// Reads a pipe to its end in chunks: captured whole (up to [`MAX_CAPTURED_STDOUT`]) or logged
/// line by line, each line held up to [`MAX_LINE_BYTES`]. Memory stays bounded whatever the
/// process writes.
pub(super) async fn read_lines<R: AsyncRead + Unpin>(
    mut pipe: R,
    stream: &'static str,
    capture: bool,
    log: &LogFields,
    stop: &CancellationToken,
) -> Collected {
    let mut collected = Collected::default();
    let mut line = Line::default();
    // most hooks print a line or nothing: a small buffer first, the full one once it fills
    let mut chunk = vec![0_u8; FIRST_READ];
    loop {
        let read = tokio::select! {
            read = pipe.read(&mut chunk) => read,
            () = stop.cancelled() => break,
        };
        let read = match read {
            Ok(0) | Err(_) => break,
            Ok(read) if read == chunk.len() && read < READ_CHUNK => {
                chunk.resize(READ_CHUNK, 0);
                &chunk[..read]
            }
            Ok(read) => &chunk[..read],
        };
        if capture {
            collected.capture(read);
            continue;
        }
        for piece in read.split_inclusive(|byte| *byte == b'\n') {
            if line.push(piece) {
                finish_line(log, stream, &line, &mut collected.tail);
                keep_tail_of(stream, &mut collected.tail, b"\n");
                line.clear();
            }
        }
    }
    if !line.is_empty() {
        finish_line(log, stream, &line, &mut collected.tail);
    }
    collected
}

pub(super) fn finish_line(log: &LogFields, stream: &'static str, line: &Line, tail: &mut Vec<u8>) {
    log_line(log, stream, line);
    keep_tail_of(stream, tail, &line.bytes);
    if line.dropped > 0 {
        keep_tail_of(stream, tail, truncation_marker(line.dropped).as_bytes());
    }
}

/// Keeps the end of stderr for the error message.
pub(super) fn keep_tail_of(stream: &'static str, tail: &mut Vec<u8>, bytes: &[u8]) {
    if stream == "stderr" {
        keep_tail(tail, bytes);
    }
}

pub(super) fn truncation_marker(dropped: usize) -> String {
    format!(" [line truncated: {dropped} more bytes dropped]")
}

pub(super) fn keep_tail(tail: &mut Vec<u8>, line: &[u8]) {
    tail.extend_from_slice(line);
    if tail.len() > STDERR_TAIL_BYTES {
        let excess = tail.len() - STDERR_TAIL_BYTES;
        tail.drain(..excess);
    }
}

pub(super) fn log_line(log: &LogFields, stream: &'static str, line: &Line) {
    let text = String::from_utf8_lossy(&line.bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    // cut on a character boundary: a byte index inside a multi-byte character would panic
    let (text, cut) = match text.char_indices().nth(MAX_LOG_LINE) {
        Some((cut, _)) => (&text[..cut], text.len() - cut),
        None => (text, 0),
    };
    if log.quiet {
        let (hook, binding) = (&log.hook, &log.binding);
        tracing::debug!(hook, binding, output = stream, "{text}");
        return;
    }
    let dropped = line.dropped + cut;
    let marker = if dropped > 0 {
        truncation_marker(dropped)
    } else {
        String::new()
    };
    let line = crate::logging::HookLine {
        hook: &log.hook,
        module: &log.module,
        binding: &log.binding,
        output: stream,
    };
    crate::logging::hook_output(line, &format!("{text}{marker}"));
}

/// Finishes reading both pipes; pipes still open after [`OUTPUT_DRAIN`] (a background child
/// holds them) are abandoned, keeping what was read so far.
pub(super) async fn drain<F>(
    readers: std::pin::Pin<&mut F>,
    stop: &CancellationToken,
) -> (Collected, Collected)
where
    F: std::future::Future<Output = (Collected, Collected)>,
{
    let mut readers = readers;
    match tokio::time::timeout(OUTPUT_DRAIN, readers.as_mut()).await {
        Ok(collected) => collected,
        Err(_) => {
            stop.cancel();
            readers.await
        }
    }
}
