//! Loopback TCP proxies around a test cluster, on plain threads:
//! - [`EgressProxy`]: the HTTP CONNECT proxy on a Unix socket that the API server's `cluster`
//!   egress goes through, so a webhook Service (`NAME.NAMESPACE.svc:443`) reaches a server on a
//!   loopback port with its real name (TLS server name, caBundle) and no DNS;
//! - [`FrontProxy`]: a forwarder between the operator and the API server that a test can cut
//!   (every open connection, watches included) and hold (new connections wait), as a network
//!   fault or an API server restart would.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

/// A stream that can be cloned for the other direction and half-closed.
trait Duplex: std::io::Read + std::io::Write + Send + Sized + 'static {
    fn clone_stream(&self) -> Option<Self>;
    fn close_write(&self);
}

impl Duplex for TcpStream {
    fn clone_stream(&self) -> Option<Self> {
        self.try_clone().ok()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

impl Duplex for UnixStream {
    fn clone_stream(&self) -> Option<Self> {
        self.try_clone().ok()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

/// Copies bytes both ways between `a` and `b` until either side closes.
fn pipe<A: Duplex, B: Duplex>(a: A, b: B) {
    let (Some(mut a2), Some(mut b2)) = (a.clone_stream(), b.clone_stream()) else {
        return;
    };
    let (mut a, mut b) = (a, b);
    thread::spawn(move || {
        let _ = std::io::copy(&mut a2, &mut b2);
        b2.close_write();
    });
    thread::spawn(move || {
        let _ = std::io::copy(&mut b, &mut a);
        a.close_write();
    });
}

/// An HTTP CONNECT proxy on a Unix socket that sends `host:port` to the address routed for it.
#[derive(Clone)]
pub struct EgressProxy {
    pub socket: PathBuf,
    routes: Arc<Mutex<HashMap<String, SocketAddr>>>,
}

impl EgressProxy {
    /// Listens on the Unix socket `dir/egress.sock`.
    pub fn start(dir: &Path) -> Self {
        let socket = dir.join("egress.sock");
        let listener = UnixListener::bind(&socket).expect("bind the egress proxy");
        let proxy = Self {
            socket,
            routes: Arc::default(),
        };
        let routes = proxy.routes.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let routes = routes.clone();
                thread::spawn(move || connect(stream, &routes));
            }
        });
        proxy
    }

    /// Sends CONNECTs to `host_port` (say `webhook.ns.svc:443`) to `to`.
    pub fn route(&self, host_port: &str, to: SocketAddr) {
        self.routes
            .lock()
            .expect("routes lock")
            .insert(host_port.to_string(), to);
    }
}

/// Serves one CONNECT: reads the request head, dials the route and pipes the rest.
fn connect(mut stream: UnixStream, routes: &Mutex<HashMap<String, SocketAddr>>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let target = first.split_whitespace().nth(1).unwrap_or_default();
    let route = routes.lock().expect("routes lock").get(target).copied();
    let Some(upstream) = route.and_then(|to| TcpStream::connect(to).ok()) else {
        let _ = stream.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
        return;
    };
    if stream
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    // a client may have sent bytes after the head already (it should not before the 200)
    let buffered = reader.buffer().to_vec();
    if !buffered.is_empty() && (&upstream).write_all(&buffered).is_err() {
        return;
    }
    pipe(stream, upstream);
}

#[derive(Default)]
struct FrontState {
    held: bool,
    open: Vec<TcpStream>,
}

/// A TCP forwarder on loopback in front of `upstream`, which a test can cut and hold.
#[derive(Clone)]
pub struct FrontProxy {
    pub addr: SocketAddr,
    state: Arc<(Mutex<FrontState>, Condvar)>,
}

impl FrontProxy {
    pub fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the front proxy");
        let addr = listener.local_addr().expect("front proxy address");
        let proxy = Self {
            addr,
            state: Arc::default(),
        };
        let state = proxy.state.clone();
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = state.clone();
                thread::spawn(move || forward(stream, upstream, &state));
            }
        });
        proxy
    }

    /// Closes every open connection and holds new ones until [`FrontProxy::release`].
    pub fn cut_and_hold(&self) {
        let (lock, _) = &*self.state;
        let mut state = lock.lock().expect("front proxy lock");
        state.held = true;
        for stream in state.open.drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Lets held and new connections through again.
    pub fn release(&self) {
        let (lock, wake) = &*self.state;
        lock.lock().expect("front proxy lock").held = false;
        wake.notify_all();
    }
}

fn forward(stream: TcpStream, upstream: SocketAddr, state: &(Mutex<FrontState>, Condvar)) {
    let (lock, wake) = state;
    let mut guard = lock.lock().expect("front proxy lock");
    while guard.held {
        guard = wake.wait(guard).expect("front proxy lock");
    }
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    if let (Ok(a), Ok(b)) = (stream.try_clone(), server.try_clone()) {
        guard.open.push(a);
        guard.open.push(b);
    }
    drop(guard);
    pipe(stream, server);
}
