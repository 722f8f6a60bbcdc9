//! A TCP proxy of a test's or benchmark's own between the system and a server (RabbitMQ), that
//! can be cut — listener closed, every connection dropped — and restored on the same port: the
//! server unreachable for a while without stopping the machine's server.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::net::{TcpSocket, TcpStream};
use tokio_util::sync::CancellationToken;

/// A TCP proxy on a loopback port to `upstream`; cut when dropped.
pub struct Proxy {
    port: u16,
    upstream: SocketAddr,
    /// Cancelled by a cut: the listener's task and every connection's end with it.
    live: Mutex<CancellationToken>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> io::Result<Arc<Self>> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let proxy = Arc::new(Self {
            port,
            upstream,
            live: Mutex::new(CancellationToken::new()),
        });
        proxy.restore()?;
        Ok(proxy)
    }

    /// The loopback port clients dial.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Closes the listener and drops every connection: the server is unreachable (connections
    /// refused) until [`Proxy::restore`].
    pub fn cut(&self) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancel();
    }

    /// Listens on the same port again. Fails if the port was taken meanwhile.
    pub fn restore(&self) -> io::Result<()> {
        let token = CancellationToken::new();
        let socket = TcpSocket::new_v4()?;
        // The cut connections' sockets may linger in TIME_WAIT on this port.
        socket.set_reuseaddr(true)?;
        socket.bind(SocketAddr::from(([127, 0, 0, 1], self.port)))?;
        let listener = socket.listen(128)?;
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = token.clone();
        let upstream = self.upstream;
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = token.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((mut client, _)) = accepted else {
                    continue;
                };
                let token = token.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = token.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                    }
                });
            }
        });
        Ok(())
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
    }
}
