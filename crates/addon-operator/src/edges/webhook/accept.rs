//! The webhook server's accept loop and its bounds: at most `max_connections` connections (more are closed as they are accepted); at most `max_handshakes` connections that have sent nothing yet (a new one closes the oldest, so idle sockets cannot keep real clients out) and at most `max_handshakes` TLS handshakes at once (others wait for a turn), all within `handshake_timeout`; connections idle past [`IDLE_TIMEOUT`] closed.

use std::collections::VecDeque;
use std::future::Future as _;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::AbortHandle;
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

/// Default of `--webhook-max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default of `--webhook-max-handshakes`.
pub const DEFAULT_MAX_HANDSHAKES: usize = 256;
/// Default of `--webhook-handshake-timeout`.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with nothing read or written for this long is closed (above the 30 s the API
/// server gives a webhook, so a review waiting for its hook is never cut).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How many connections and handshakes one server takes at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub max_handshakes: usize,
    pub handshake_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
        }
    }
}

/// A connection whose handshake finished, holding its place among `max_connections`.
pub type Accepted = (Bounded<TlsStream<TcpStream>>, SocketAddr);

/// The connections that have sent nothing yet, oldest first.
#[derive(Default)]
struct Silent {
    next: u64,
    tasks: VecDeque<(u64, AbortHandle)>,
}

/// What every connection's task shares.
#[derive(Clone)]
struct Shared {
    acceptor: TlsAcceptor,
    tx: mpsc::Sender<Accepted>,
    limits: Limits,
    silent: Arc<Mutex<Silent>>,
    handshakes: Arc<Semaphore>,
}

/// Accepts until `cancel`, handing finished handshakes to `tx`.
pub async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    limits: Limits,
    tx: mpsc::Sender<Accepted>,
    cancel: CancellationToken,
) {
    let connections = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let shared = Shared {
        acceptor,
        tx,
        limits,
        silent: Arc::default(),
        handshakes: Arc::new(Semaphore::new(limits.max_handshakes.max(1))),
    };
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (tcp, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::debug!(error = %e, "webhook server: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            tracing::debug!(%peer, max = limits.max_connections, "webhook server: too many connections, closed");
            drop(tcp);
            continue;
        };
        start_connection(&shared, tcp, peer, permit);
    }
}

/// Serves `tcp` in a task registered among the silent connections until it speaks; the oldest
/// silent connection is closed first when `max_handshakes` are silent already.
fn start_connection(
    shared: &Shared,
    tcp: TcpStream,
    peer: SocketAddr,
    permit: OwnedSemaphorePermit,
) {
    let mut silent = shared.silent.lock().unwrap_or_else(PoisonError::into_inner);
    while silent.tasks.len() >= shared.limits.max_handshakes.max(1) {
        if let Some((_, oldest)) = silent.tasks.pop_front() {
            tracing::debug!("webhook server: too many silent connections, the oldest is closed");
            oldest.abort();
        }
    }
    let id = silent.next;
    silent.next += 1;
    let task = tokio::spawn(handshake(shared.clone(), id, tcp, peer, permit));
    silent.tasks.push_back((id, task.abort_handle()));
}

/// Waits for the client's first bytes, then for a handshake turn, then shakes hands, all within
/// the handshake timeout; the connection goes to the server.
async fn handshake(
    shared: Shared,
    id: u64,
    tcp: TcpStream,
    peer: SocketAddr,
    permit: OwnedSemaphorePermit,
) {
    let shaken = tokio::time::timeout(shared.limits.handshake_timeout, async {
        // the first byte of the ClientHello, left in the socket for the handshake
        let spoke = tcp.peek(&mut [0u8; 1]).await;
        // no longer closed for a newer connection: it spoke (or hung up)
        forget(&shared.silent, id);
        if spoke? == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let _turn = shared
            .handshakes
            .acquire()
            .await
            .map_err(io::Error::other)?;
        shared.acceptor.accept(tcp).await
    });
    match shaken.await {
        Ok(Ok(stream)) => {
            // a closed receiver means the server is shutting down
            let _ = shared.tx.send((Bounded::new(stream, permit), peer)).await;
        }
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "webhook TLS handshake failed"),
        Err(_) => {
            forget(&shared.silent, id);
            tracing::debug!(%peer, "webhook TLS handshake timed out");
        }
    }
}

fn forget(silent: &Mutex<Silent>, id: u64) {
    let mut silent = silent.lock().unwrap_or_else(PoisonError::into_inner);
    silent.tasks.retain(|(task, _)| *task != id);
}

/// A connection that holds its permit until it is dropped, and fails once nothing was read or
/// written for [`IDLE_TIMEOUT`].
pub struct Bounded<S> {
    io: S,
    _permit: OwnedSemaphorePermit,
    idle: Pin<Box<Sleep>>,
}

impl<S> Bounded<S> {
    fn new(io: S, permit: OwnedSemaphorePermit) -> Self {
        Self {
            io,
            _permit: permit,
            idle: Box::pin(tokio::time::sleep(IDLE_TIMEOUT)),
        }
    }

    /// Pushes the idle deadline on after progress; an error once it passed.
    fn check(&mut self, cx: &mut Context<'_>, progress: bool) -> io::Result<()> {
        if progress {
            self.idle.as_mut().reset(Instant::now() + IDLE_TIMEOUT);
            return Ok(());
        }
        match self.idle.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(io::ErrorKind::TimedOut, "idle connection")),
            Poll::Pending => Ok(()),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Pending => match self.check(cx, false) {
                Ok(()) => Poll::Pending,
                Err(idle) => Poll::Ready(Err(idle)),
            },
            Poll::Ready(result) => {
                let progress = buf.filled().len() > before;
                let _ = self.check(cx, progress);
                Poll::Ready(result)
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            let _ = self.check(cx, *n > 0);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    fn permit() -> OwnedSemaphorePermit {
        Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_idle_past_the_limit_fails_and_traffic_keeps_it_open() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut conn = Bounded::new(ours, permit());
        let mut buf = [0u8; 8];
        tokio::time::advance(IDLE_TIMEOUT - Duration::from_secs(1)).await;
        theirs.write_all(b"ping").await.unwrap();
        assert_eq!(conn.read(&mut buf).await.unwrap(), 4);
        // the deadline moved on with the bytes read: another almost-full period is fine
        tokio::time::advance(IDLE_TIMEOUT - Duration::from_secs(1)).await;
        theirs.write_all(b"pong").await.unwrap();
        assert_eq!(conn.read(&mut buf).await.unwrap(), 4);
        let silent = conn.read(&mut buf).await.unwrap_err();
        assert_eq!(silent.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn the_permit_is_given_back_when_the_connection_ends() {
        let connections = Arc::new(Semaphore::new(1));
        let taken = Arc::clone(&connections).try_acquire_owned().unwrap();
        let (ours, _theirs) = tokio::io::duplex(64);
        let conn = Bounded::new(ours, taken);
        assert!(Arc::clone(&connections).try_acquire_owned().is_err());
        drop(conn);
        assert!(connections.try_acquire_owned().is_ok());
    }
}
