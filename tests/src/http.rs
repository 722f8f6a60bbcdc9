//! HTTP/1.1 spoken by hand, for the suites that must set every header themselves (a forged
//! `Host` or `Origin`) or speak over a TLS stream of their own: one request's bytes, and the
//! status, headers and body read back.

use std::net::SocketAddr;

/// The bytes of one HTTP/1.1 request with `Connection: close`. `Host` is `addr` unless `headers`
/// names one; a body (and any `POST`, empty if it has none) goes as JSON with its length.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        text.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if body.is_some() || method == "POST" {
        text.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.unwrap_or("").len()
        ));
    }
    text.push_str("\r\n");
    text.push_str(body.unwrap_or(""));
    text
}

/// An HTTP answer: the status, the headers (names in lowercase) and the body.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Every header, its name in lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as read.
    pub body: String,
}

impl Answer {
    /// Reads an answer off the text a server wrote before closing the connection.
    pub fn parse(response: &str) -> Self {
        let (head, body) = response.split_once("\r\n\r\n").expect("headers and body");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Self {
            status,
            headers,
            body: body.to_owned(),
        }
    }

    /// The first header called `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (null when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Sends one HTTP/1.1 request ([`request`]) to `addr` and reads the answer to the end.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the HTTP port");
    let request = request(addr, method, path, headers, body);
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .expect("read the answer");
    Answer::parse(&response)
}
