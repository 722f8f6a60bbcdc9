//! `auth.mode = "dev"` on this machine: the secret `ontoloop up` generates and keeps in
//! `auth.dev_secret_file` (owner-only), and the short-lived tokens the CLI signs from it for the
//! caller each command acts as, so `make run` stays a two-command start with tokens checked.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use ontoloop_auth::{AuthSettings, Identity, Role};
use ontoloop_core::Caller;

/// How long a token the CLI signs for one command lives.
const COMMAND_TOKEN_SECS: u64 = 600;

/// The secret in `path`, created (32 random bytes as hex, readable by the owner only) when the
/// file does not exist yet, so tokens signed before a restart stay valid.
pub fn load_or_create(path: &Path) -> anyhow::Result<String> {
    if let Some(secret) = read(path)? {
        return Ok(secret);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let bytes: [u8; 32] = rand::random();
    let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    write_private(path, &secret).with_context(|| format!("write {}", path.display()))?;
    Ok(secret)
}

/// The secret in `path`, or none when there is no such file.
pub fn read(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = text.trim().to_owned();
            anyhow::ensure!(
                secret.len() >= 32,
                "{} does not hold a dev secret (32 bytes or more); delete it and restart \
                 `ontoloop up`",
                path.display()
            );
            Ok(Some(secret))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("read {}", path.display())),
    }
}

/// A token for `caller` with every role, signed with the dev secret, when the settings' dev
/// secret file exists (an `ontoloop up` in dev mode made it); none otherwise.
pub fn command_token(auth: &AuthSettings, caller: &Caller) -> anyhow::Result<Option<String>> {
    let Some(secret) = read(Path::new(&auth.dev_secret_file))? else {
        return Ok(None);
    };
    let identity = Identity {
        tenant: caller.tenant().to_owned(),
        principal: caller.principal().to_owned(),
        groups: caller.groups().to_vec(),
        roles: Role::ALL.into_iter().collect(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("read the clock")?
        .as_secs();
    let token = ontoloop_auth::issue(
        &auth.with_dev_secret(&secret),
        &identity,
        now,
        COMMAND_TOKEN_SECS,
    )
    .context("sign a dev token")?;
    Ok(Some(token))
}

#[cfg(unix)]
fn write_private(path: &Path, secret: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(secret.as_bytes())
}

#[cfg(not(unix))]
fn write_private(path: &Path, secret: &str) -> std::io::Result<()> {
    std::fs::write(path, secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_is_made_once_owner_only_and_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("data/dev-auth-secret");
        assert_eq!(read(&path).expect("absent is fine"), None);
        let first = load_or_create(&path).expect("created");
        assert_eq!(first.len(), 64);
        assert_eq!(load_or_create(&path).expect("kept"), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path)
                .expect("metadata")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&path, "short").expect("overwrite");
        assert!(read(&path).is_err());
    }
}
