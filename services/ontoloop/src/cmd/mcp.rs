//! `ontoloop mcp`: the MCP server for agents, on stdio (what an MCP client launches) or on
//! streamable HTTP (`--http`), calling the running services with the caller's token.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use ontoloop::client::{Bearer, Clients};
use ontoloop::mcp::http::{self, HttpLimits};
use ontoloop::mcp::{Credentials, Server};
use ontoloop_auth::AuthMode;

use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Over stdio, the bearer token every call carries (the caller is the token's identity).
    /// Default: in dev mode (`make run`), a short-lived token for --as signed on this machine.
    #[arg(long, env = "ONTOLOOP_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The caller named in calls that carry no token, as TENANT/PRINCIPAL: the caller of dev
    /// tokens, or every caller when the services run with auth.mode = "off".
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: Option<String>,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio: a port (on 127.0.0.1) or
    /// HOST:PORT. Each request's `Authorization: Bearer` header is its caller.
    #[arg(long, value_name = "PORT|HOST:PORT")]
    http: Option<String>,
    /// A `Host` the HTTP endpoint accepts besides localhost, 127.0.0.1 and ::1 (repeatable);
    /// others are refused, against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "HOST[:PORT]")]
    allowed_hosts: Vec<String>,
    /// Sessions the HTTP endpoint holds at once; a new one beyond it is refused until one ends.
    #[arg(long, default_value_t = 256)]
    max_sessions: usize,
    /// Seconds a session of the HTTP endpoint may stay idle before it ends.
    #[arg(long, default_value_t = 300)]
    session_idle_secs: u64,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?;
        if let Some(spec) = &self.caller {
            session = session.acting_as(spec)?;
        }
        let fallback = session.caller().ok().cloned();
        // The clients carry no token of their own: each call carries its caller's.
        let clients = Clients::from_settings_with(&session.settings, Bearer::default()).await?;
        let Some(addr) = self.http else {
            let credentials = Credentials::Server(token_source(&session, self.token));
            Server::new(clients, credentials, fallback)
                .serve_stdio()
                .await?;
            return Ok(ExitCode::SUCCESS);
        };
        let addr: SocketAddr = match addr.parse::<u16>() {
            Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
            Err(_) => addr
                .parse()
                .with_context(|| format!("--http {addr:?}: expected PORT or HOST:PORT"))?,
        };
        // Without a token, an HTTP request acts as the `--as` caller (or the settings' default
        // caller): fine for a loopback-only trial, never for a port others can reach.
        if !addr.ip().is_loopback() && fallback.is_some() {
            anyhow::bail!(
                "--http {addr}: a caller of its own (--as or the settings' default caller) is \
                 served over HTTP only on loopback, since a request without a token would act \
                 as it; on another address give each request its token and no --as"
            );
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("bind {addr}"))?;
        let bound = listener.local_addr().context("read the bound address")?;
        eprintln!("mcp http://{bound}{}", http::PATH);
        let limits = HttpLimits {
            max_body_bytes: session.settings.services.max_message_bytes,
            allowed_hosts: self.allowed_hosts,
            max_sessions: self.max_sessions,
            session_idle: std::time::Duration::from_secs(self.session_idle_secs),
        };
        let server = Server::new(clients, Credentials::Request, fallback);
        http::serve(
            listener,
            server,
            limits,
            ontoloop_runtime::shutdown_signal(),
        )
        .await?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The stdio server's token on each call: `--token` (or `$ONTOLOOP_TOKEN`); else, unless
/// `auth.mode = "jwt"`, a fresh dev token for the `--as` caller when `ontoloop up` left its dev
/// secret here; else none.
fn token_source(session: &Session, token: Option<String>) -> ontoloop::mcp::TokenSource {
    if let Some(token) = token.filter(|t| !t.trim().is_empty()) {
        return Arc::new(move || Ok(Some(token.clone())));
    }
    let caller = session.caller().ok().cloned();
    let auth = session.settings.auth.clone();
    Arc::new(move || match &caller {
        Some(caller) if auth.mode != AuthMode::Jwt => crate::dev_auth::command_token(&auth, caller),
        _ => Ok(None),
    })
}
