//! Keeping secrets out of logs and error messages.

/// Replaces the password of a `scheme://user:password@host/...` URL, and the value of a
/// `password=` query parameter (PostgreSQL URLs accept one), with `***`; any other text comes
/// back unchanged.
pub fn redact_url(url: &str) -> String {
    redact_query_password(&redact_userinfo(url))
}

fn redact_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let authority_start = scheme_end + 3;
    let authority_end = url[authority_start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| authority_start + i);
    let authority = &url[authority_start..authority_end];
    let Some(at) = authority.rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &authority[..at];
    let Some(colon) = userinfo.find(':') else {
        return url.to_owned();
    };
    format!(
        "{}{}:***{}",
        &url[..authority_start],
        &userinfo[..colon],
        &url[authority_start + at..]
    )
}

fn redact_query_password(url: &str) -> String {
    let Some(query_start) = url.find('?') else {
        return url.to_owned();
    };
    let (head, query) = url.split_at(query_start + 1);
    let (query, fragment) = query.split_at(query.find('#').unwrap_or(query.len()));
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, _)) if name.eq_ignore_ascii_case("password") => format!("{name}=***"),
            _ => param.to_owned(),
        })
        .collect();
    format!("{head}{}{fragment}", params.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(
            redact_url("postgres://app:secret@db:5432/x"),
            "postgres://app:***@db:5432/x"
        );
        assert_eq!(
            redact_url("amqp://guest:guest@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(
            redact_url("postgres://postgres@db/x"),
            "postgres://postgres@db/x"
        );
        assert_eq!(
            redact_url("sqlite://data/x.db?mode=rwc"),
            "sqlite://data/x.db?mode=rwc"
        );
        assert_eq!(redact_url("memory"), "memory");
        assert_eq!(
            redact_url(
                "postgres://app@db/x?sslmode=verify-full&password=secret&sslrootcert=/ca.pem"
            ),
            "postgres://app@db/x?sslmode=verify-full&password=***&sslrootcert=/ca.pem"
        );
        assert_eq!(
            redact_url("postgres://app:a@db/x?PASSWORD=b#frag"),
            "postgres://app:***@db/x?PASSWORD=***#frag"
        );
    }
}
