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

/// A proxy in front of the broker an `amqp://` URL names, and the URL that dials the broker
/// through it (see [`amqp_url_through`]).
pub async fn amqp_proxy(url: &str) -> io::Result<(Arc<Proxy>, String)> {
    proxy_for(url, amqp_url_through).await
}

/// A proxy in front of the PostgreSQL server a `postgres://` URL names, and the URL that dials
/// it through the proxy (see [`postgres_url_through`]).
pub async fn postgres_proxy(url: &str) -> io::Result<(Arc<Proxy>, String)> {
    proxy_for(url, postgres_url_through).await
}

async fn proxy_for(
    url: &str,
    through: fn(&str, u16) -> io::Result<(String, String)>,
) -> io::Result<(Arc<Proxy>, String)> {
    let (upstream, _) = through(url, 0)?;
    let upstream = tokio::net::lookup_host(upstream.as_str())
        .await?
        .next()
        .ok_or_else(|| invalid("the server's host resolves to no address"))?;
    let proxy = Proxy::start(upstream).await?;
    let (_, proxied) = through(url, proxy.port())?;
    Ok((proxy, proxied))
}

/// The `host:port` an `amqp://` URL dials (port 5672 when it names none), and the same URL
/// dialling `127.0.0.1:port` instead, credentials, virtual host and query kept. `amqps://` is
/// refused: the broker's certificate names its own host, not the proxy's.
pub fn amqp_url_through(url: &str, port: u16) -> io::Result<(String, String)> {
    url_through(url, &["amqp"], "RabbitMQ", 5672, port)
}

/// The `host:port` a `postgres://` (or `postgresql://`) URL dials (port 5432 when it names
/// none), and the same URL dialling `127.0.0.1:port` instead, user, database and parameters
/// kept.
pub fn postgres_url_through(url: &str, port: u16) -> io::Result<(String, String)> {
    url_through(url, &["postgres", "postgresql"], "PostgreSQL", 5432, port)
}

/// `url` of one of `schemes` dialling `127.0.0.1:port` instead of its host, and the
/// `host:port` it dialled (`default_port` when it names none).
fn url_through(
    url: &str,
    schemes: &[&str],
    server: &str,
    default_port: u16,
    port: u16,
) -> io::Result<(String, String)> {
    let Some((scheme, rest)) = url
        .split_once("://")
        .filter(|(scheme, _)| schemes.contains(scheme))
    else {
        return Err(invalid(&format!(
            "only plain {}:// URLs can be proxied",
            schemes.join("://, ")
        )));
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (userinfo, host) = match authority.rfind('@') {
        Some(at) => authority.split_at(at + 1),
        None => ("", authority),
    };
    if host.is_empty() {
        return Err(invalid(&format!("the {server} URL names no host")));
    }
    let has_port = host
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()));
    let upstream = if has_port {
        host.to_owned()
    } else {
        format!("{host}:{default_port}")
    };
    Ok((
        upstream,
        format!("{scheme}://{userinfo}127.0.0.1:{port}{tail}"),
    ))
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_sent_through_the_proxy_with_its_credentials_and_vhost() {
        let (upstream, proxied) =
            amqp_url_through("amqp://guest:guest@127.0.0.1:5672/%2f", 40_000).expect("plain amqp");
        assert_eq!(upstream, "127.0.0.1:5672");
        assert_eq!(proxied, "amqp://guest:guest@127.0.0.1:40000/%2f");
        let (upstream, proxied) = amqp_url_through("amqp://broker", 1).expect("no port");
        assert_eq!(upstream, "broker:5672");
        assert_eq!(proxied, "amqp://127.0.0.1:1");
        let (upstream, _) = amqp_url_through("amqp://u:p@[::1]/vh?heartbeat=5", 1).expect("ipv6");
        assert_eq!(upstream, "[::1]:5672");
        let err = amqp_url_through("amqps://broker:5671/", 1).expect_err("amqps refused");
        assert!(err.to_string().contains("amqp://"), "{err}");
        let err = amqp_url_through("amqp:///vh", 1).expect_err("no host");
        assert!(err.to_string().contains("no host"), "{err}");
    }

    #[test]
    fn a_database_url_is_sent_through_the_proxy_with_its_user_and_database() {
        let (upstream, proxied) =
            postgres_url_through("postgres://postgres@127.0.0.1:5432/ontoloop_test_1", 40_000)
                .expect("a postgres URL");
        assert_eq!(upstream, "127.0.0.1:5432");
        assert_eq!(
            proxied,
            "postgres://postgres@127.0.0.1:40000/ontoloop_test_1"
        );
        let (upstream, proxied) =
            postgres_url_through("postgresql://u:p@db/x?sslmode=disable", 1).expect("no port");
        assert_eq!(upstream, "db:5432");
        assert_eq!(proxied, "postgresql://u:p@127.0.0.1:1/x?sslmode=disable");
        assert!(postgres_url_through("sqlite://x.db", 1).is_err());
        assert!(postgres_url_through("amqp://broker", 1).is_err());
        assert!(postgres_url_through("postgres:///x", 1).is_err());
    }
}
