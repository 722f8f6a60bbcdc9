//! A minimal W3C WebDriver client that drives headless Chromium through `/usr/bin/chromedriver`,
//! so tests can click through the pages the services serve. `scripts/install-browser.sh`
//! installs both binaries.
//!
//! Each [`Browser`] owns one chromedriver process on a free port and one session in it. Elements
//! are addressed by CSS selector on every call rather than by handles kept across calls, because
//! the pages under test re-render and a kept handle goes stale.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

/// The Chromium binary the session runs (Debian's `chromium` package).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The WebDriver server (Debian's `chromium-driver` package).
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Command-line switches for Chromium: headless, and quiet enough to run in a container as root.
pub const CHROMIUM_ARGS: [&str; 5] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--window-size=1280,900",
];

/// How long one WebDriver command may take; starting Chromium is the slowest.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// How long chromedriver may take to answer `/status` after it is spawned.
const DRIVER_START_TIMEOUT: Duration = Duration::from_secs(20);

/// How often the `wait_*` methods look again.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The key under which WebDriver returns an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A headless Chromium session behind its own chromedriver. Dropping it shuts both down.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    http: Client<HttpConnector, Full<Bytes>>,
}

impl Browser {
    /// Spawns chromedriver on a free port, waits until it is ready, and opens a session.
    pub async fn launch() -> anyhow::Result<Browser> {
        for binary in [CHROMIUM, CHROMEDRIVER] {
            if !Path::new(binary).exists() {
                bail!(
                    "{binary} not found: run scripts/install-browser.sh to install chromium and chromium-driver"
                );
            }
        }
        let port = free_port().context("pick a port for chromedriver")?;
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("spawn {CHROMEDRIVER}"))?;
        let http = Client::builder(TokioExecutor::new()).build_http();
        // From here on `Drop` kills chromedriver whatever goes wrong.
        let mut browser = Browser {
            driver,
            port,
            session: String::new(),
            http,
        };
        browser
            .await_driver()
            .await
            .context("wait for chromedriver")?;
        let capabilities = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": { "binary": CHROMIUM, "args": CHROMIUM_ARGS },
                }
            }
        });
        let created = browser
            .request(Method::POST, "/session", Some(capabilities))
            .await
            .context("create a webdriver session")?;
        browser.session = created
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("new session answer has no sessionId: {created}"))?
            .to_owned();
        Ok(browser)
    }

    /// Loads `url` and returns once the page has loaded.
    pub async fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.command(Method::POST, "url", Some(json!({ "url": url })))
            .await
            .with_context(|| format!("go to {url}"))?;
        Ok(())
    }

    /// The WebDriver id of the first element matching `css`; an error when there is none.
    pub async fn find(&self, css: &str) -> anyhow::Result<String> {
        let found = self
            .command(Method::POST, "element", Some(css_locator(css)))
            .await
            .with_context(|| format!("find {css}"))?;
        element_id(&found)
    }

    /// The WebDriver ids of every element matching `css`, possibly none.
    pub async fn find_all(&self, css: &str) -> anyhow::Result<Vec<String>> {
        let found = self
            .command(Method::POST, "elements", Some(css_locator(css)))
            .await
            .with_context(|| format!("find all {css}"))?;
        found
            .as_array()
            .ok_or_else(|| anyhow!("find all {css}: expected a list, got {found}"))?
            .iter()
            .map(element_id)
            .collect()
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) -> anyhow::Result<()> {
        let id = self.find(css).await?;
        self.command(
            Method::POST,
            &format!("element/{id}/click"),
            Some(json!({})),
        )
        .await
        .with_context(|| format!("click {css}"))?;
        Ok(())
    }

    /// Types `text` into the first element matching `css`, after what it already holds.
    pub async fn type_text(&self, css: &str, text: &str) -> anyhow::Result<()> {
        let id = self.find(css).await?;
        self.command(
            Method::POST,
            &format!("element/{id}/value"),
            Some(json!({ "text": text })),
        )
        .await
        .with_context(|| format!("type into {css}"))?;
        Ok(())
    }

    /// Empties the first input or text area matching `css`.
    pub async fn clear(&self, css: &str) -> anyhow::Result<()> {
        let id = self.find(css).await?;
        self.command(
            Method::POST,
            &format!("element/{id}/clear"),
            Some(json!({})),
        )
        .await
        .with_context(|| format!("clear {css}"))?;
        Ok(())
    }

    /// The rendered text of the first element matching `css`.
    pub async fn text(&self, css: &str) -> anyhow::Result<String> {
        let id = self.find(css).await?;
        let text = self
            .command(Method::GET, &format!("element/{id}/text"), None)
            .await
            .with_context(|| format!("read the text of {css}"))?;
        text.as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("text of {css}: expected a string, got {text}"))
    }

    /// Waits until an element matches `css` and returns its id.
    pub async fn wait_for(&self, css: &str, timeout: Duration) -> anyhow::Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(id) = self.find_all(css).await?.into_iter().next() {
                return Ok(id);
            }
            if Instant::now() >= deadline {
                bail!("no element matched {css} within {timeout:?}");
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Waits until the first element matching `css` shows text containing `needle`, and
    /// returns that text. Reads the text in one script so a re-render between finding the
    /// element and reading it cannot fail the wait.
    pub async fn wait_for_text(
        &self,
        css: &str,
        needle: &str,
        timeout: Duration,
    ) -> anyhow::Result<String> {
        const READ: &str =
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;";
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.execute(READ, vec![json!(css)]).await?;
            if let Some(text) = text.as_str()
                && text.contains(needle)
            {
                return Ok(text.to_owned());
            }
            if Instant::now() >= deadline {
                bail!("{css} did not show {needle:?} within {timeout:?}; it shows {text}");
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// Runs `script` as the body of a function called with `args`, and returns what it returns.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> anyhow::Result<Value> {
        self.command(
            Method::POST,
            "execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
        .await
        .context("execute a script")
    }

    /// Saves a PNG of the viewport to `path`, creating its directory.
    pub async fn screenshot(&self, path: impl AsRef<Path>) -> anyhow::Result<()> {
        let path = path.as_ref();
        let encoded = self
            .command(Method::GET, "screenshot", None)
            .await
            .context("take a screenshot")?;
        let encoded = encoded
            .as_str()
            .ok_or_else(|| anyhow!("screenshot: expected base64 text, got {encoded}"))?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .context("decode the screenshot")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        std::fs::write(path, png).with_context(|| format!("write {}", path.display()))
    }

    /// Accepts the open `alert`, `confirm` or `prompt` dialog.
    pub async fn accept_alert(&self) -> anyhow::Result<()> {
        self.command(Method::POST, "alert/accept", Some(json!({})))
            .await
            .context("accept the alert")?;
        Ok(())
    }

    /// Ends the session, which quits Chromium, then stops chromedriver.
    pub async fn close(self) -> anyhow::Result<()> {
        self.request(Method::DELETE, &format!("/session/{}", self.session), None)
            .await
            .context("end the webdriver session")?;
        Ok(())
    }

    /// Polls `/status` until chromedriver says it is ready.
    async fn await_driver(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + DRIVER_START_TIMEOUT;
        loop {
            if let Some(status) = self.driver.try_wait().context("check on chromedriver")? {
                bail!("chromedriver exited before it was ready: {status}");
            }
            let last = match self.request(Method::GET, "/status", None).await {
                Ok(status) if status.get("ready") == Some(&Value::Bool(true)) => return Ok(()),
                Ok(status) => anyhow!("not ready: {status}"),
                Err(error) => error,
            };
            if Instant::now() >= deadline {
                return Err(last.context(format!("not ready within {DRIVER_START_TIMEOUT:?}")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Sends a command to this session: `path` is relative to `/session/{id}/`.
    async fn command(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        self.request(method, &format!("/session/{}/{path}", self.session), body)
            .await
    }

    /// Sends one request to chromedriver and unwraps the `value` of its answer, turning a
    /// WebDriver error into an `Err` that names it.
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let uri = format!("http://127.0.0.1:{}{path}", self.port);
        let mut builder = Request::builder().method(method.clone()).uri(&uri);
        let body = match body {
            Some(body) => {
                builder = builder.header(hyper::header::CONTENT_TYPE, "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        let request = builder.body(Full::new(body)).context("build the request")?;
        let exchange = async {
            let response = self.http.request(request).await.context("send")?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .context("read the answer")?
                .to_bytes();
            anyhow::Ok((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(COMMAND_TIMEOUT, exchange)
            .await
            .map_err(|_| anyhow!("no answer within {COMMAND_TIMEOUT:?}"))
            .and_then(|answer| answer)
            .with_context(|| format!("{method} {path}"))?;
        let answer: Value = serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{method} {path}: answer is not JSON: {}",
                String::from_utf8_lossy(&bytes)
            )
        })?;
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        if !status.is_success() {
            let error = value
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            // Chromium appends build and platform details after the first line.
            let message = value
                .get("message")
                .and_then(Value::as_str)
                .and_then(|m| m.lines().next())
                .unwrap_or("");
            bail!("{method} {path}: {status} {error}: {message}");
        }
        Ok(value)
    }
}

impl Drop for Browser {
    /// Asks chromedriver to quit its sessions and exit (its `/shutdown` endpoint), so no
    /// Chromium outlives the test, then kills it if it is still there. Blocking is fine here:
    /// it is a test, and the exchange is local and short.
    fn drop(&mut self) {
        let _ = shutdown_driver(self.port);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            match self.driver.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) => std::thread::sleep(POLL_INTERVAL),
                Err(_) => break,
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Where a test should write an artifact such as a screenshot: `test-artifacts/name` in the
/// Cargo target directory (`CARGO_TARGET_DIR`, else the workspace's `target`). Creates the
/// directory.
pub fn artifact_path(name: &str) -> anyhow::Result<PathBuf> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        // A relative target directory is relative to where cargo ran, which for this
        // workspace is its root.
        Some(dir) => workspace.join(dir),
        None => workspace.join("target"),
    };
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    Ok(dir.join(name))
}

/// A port nothing listens on right now. Another process could take it before chromedriver
/// binds it; that would fail `launch` loudly rather than mix sessions up.
fn free_port() -> std::io::Result<u16> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()
        .map(|addr| addr.port())
}

/// The body of a find-element command for a CSS selector.
fn css_locator(css: &str) -> Value {
    json!({ "using": "css selector", "value": css })
}

/// The id inside an element reference.
fn element_id(reference: &Value) -> anyhow::Result<String> {
    reference
        .get(ELEMENT_KEY)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("expected an element reference, got {reference}"))
}

/// Sends chromedriver's `GET /shutdown` over a plain blocking socket, for use in `Drop`.
fn shutdown_driver(port: u16) -> std::io::Result<()> {
    let timeout = Duration::from_secs(5);
    let mut stream = TcpStream::connect_timeout(&(Ipv4Addr::LOCALHOST, port).into(), timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET /shutdown HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    Ok(())
}
