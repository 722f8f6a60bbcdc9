//! `ontoloop token issue`: an HS256 bearer token signed with `auth.hs256_secret` (in dev mode,
//! with the secret `ontoloop up` generated), for operators handing a token to an agent, an
//! integration or a reviewer.

use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use ontoloop_auth::{AuthMode, Identity, Role};

use crate::session::Session;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print a token for a tenant, a principal and roles (agent, integration, reviewer, admin),
    /// signed with auth.hs256_secret and carrying auth.issuer and auth.audience. Clients send it
    /// as `authorization: Bearer <token>`; the CLI sends $ONTOLOOP_TOKEN.
    Issue(IssueArgs),
}

#[derive(Debug, clap::Args)]
pub struct IssueArgs {
    /// The tenant the token acts for.
    #[arg(long)]
    tenant: String,
    /// The principal (person or agent id).
    #[arg(long)]
    principal: String,
    /// A role (repeatable, or comma-separated): agent, integration, reviewer, admin.
    #[arg(long = "role", value_delimiter = ',', required = true)]
    roles: Vec<String>,
    /// Groups, comma-separated.
    #[arg(long, value_delimiter = ',')]
    groups: Vec<String>,
    /// How long the token is valid: a number with s, m, h or d (3600s, 90m, 1h, 7d).
    #[arg(long, default_value = "1h")]
    ttl: String,
}

impl Command {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        match self {
            Command::Issue(args) => args.run(config),
        }
    }
}

impl IssueArgs {
    fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let session = Session::load(config, &[])?;
        let roles = self
            .roles
            .iter()
            .map(|name| {
                Role::parse(name).with_context(|| {
                    format!("unknown role {name:?} (agent, integration, reviewer, admin)")
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let (tenant, principal) = (self.tenant.trim(), self.principal.trim());
        anyhow::ensure!(!tenant.is_empty(), "--tenant must not be empty");
        anyhow::ensure!(!principal.is_empty(), "--principal must not be empty");
        let identity = Identity {
            tenant: tenant.to_owned(),
            principal: principal.to_owned(),
            groups: self
                .groups
                .iter()
                .map(|g| g.trim().to_owned())
                .filter(|g| !g.is_empty())
                .collect(),
            roles,
        };
        let ttl = parse_ttl(&self.ttl)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .context("read the clock")?
            .as_secs();
        let mut auth = session.settings.auth.clone();
        if auth.mode == AuthMode::Dev && auth.hs256_secret.is_empty() {
            // Dev mode signs with the secret `ontoloop up` generated.
            let secret =
                crate::dev_auth::read(Path::new(&auth.dev_secret_file))?.with_context(|| {
                    format!(
                        "no dev secret at {}: start `ontoloop up` with auth.mode = \"dev\" first",
                        auth.dev_secret_file
                    )
                })?;
            auth = auth.with_dev_secret(&secret);
        }
        let token = ontoloop_auth::issue(&auth, &identity, now, ttl).context("issue a token")?;
        println!("{token}");
        Ok(ExitCode::SUCCESS)
    }
}

/// Seconds in `text`: a positive number with a unit, `s`, `m`, `h` or `d`.
fn parse_ttl(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .with_context(|| format!("--ttl {text:?}: expected a number with s, m, h or d"))?;
    let scale = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => anyhow::bail!("--ttl {text:?}: unknown unit {other:?} (s, m, h or d)"),
    };
    anyhow::ensure!(number > 0, "--ttl must be positive");
    number
        .checked_mul(scale)
        .with_context(|| format!("--ttl {text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_read_with_their_unit() {
        assert_eq!(parse_ttl("1h").expect("1h"), 3600);
        assert_eq!(parse_ttl("90m").expect("90m"), 5400);
        assert_eq!(parse_ttl("7d").expect("7d"), 604_800);
        assert_eq!(parse_ttl("45").expect("45"), 45);
        assert!(parse_ttl("0s").is_err());
        assert!(parse_ttl("1w").is_err());
        assert!(parse_ttl("h").is_err());
        assert!(parse_ttl("99999999999999999999d").is_err());
    }
}
