//! `ontoloop cite`: what a passage cited earlier is now (current, moved, revised or gone).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use ontoloop_proto::v1;

use crate::print;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The cited page and version, as an `ANSWERED_PASSAGES` answer gave it: PAGE@VERSION.
    #[arg(value_name = "PAGE@VERSION")]
    source: String,
    /// The passage's chunk hash.
    hash: String,
    /// The passage's character span in that version, START..END (picks among passages of equal
    /// text; the first when absent).
    #[arg(long, value_name = "START..END")]
    span: Option<String>,
    /// Who asks, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// Resolve only once this intake sequence number is applied (read-your-writes).
    #[arg(long, default_value_t = 0)]
    min_sequence: u64,
    /// Print the resolution as JSON.
    #[arg(long)]
    json: bool,
}

/// `PAGE@VERSION` split at its last `@` (a page id may hold one).
fn page_and_version(source: &str) -> anyhow::Result<(String, u64)> {
    let (page, version) = source
        .rsplit_once('@')
        .context("the citation is PAGE@VERSION, for example handbook@3")?;
    let version = version
        .parse()
        .with_context(|| format!("{version:?} is not a version number"))?;
    Ok((page.to_owned(), version))
}

/// `START..END` as two character offsets.
fn span(span: &str) -> anyhow::Result<(u64, u64)> {
    let (start, end) = span
        .split_once("..")
        .context("the span is START..END, for example 120..245")?;
    Ok((
        start.trim().parse().context("the span's start")?,
        end.trim().parse().context("the span's end")?,
    ))
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let (source_id, source_version) = page_and_version(&self.source)?;
        let (start, end) = self
            .span
            .as_deref()
            .map(span)
            .transpose()?
            .unwrap_or((0, 0));
        super::call_and_print(
            config,
            &self.caller,
            "resolve the citation",
            |caller| {
                Ok(v1::ResolveCitationRequest {
                    caller,
                    source_id,
                    source_version,
                    chunk_hash: self.hash,
                    start,
                    end,
                    min_sequence: self.min_sequence,
                })
            },
            |mut c, request| async move { c.retrieval.resolve_citation(request).await },
            print::citation,
            self.json,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_citation_names_its_page_version_and_span() {
        assert_eq!(
            page_and_version("mail@example@3").expect("parses"),
            ("mail@example".to_owned(), 3)
        );
        assert!(page_and_version("handbook").is_err());
        assert!(page_and_version("handbook@three").is_err());
        assert_eq!(span("120..245").expect("parses"), (120, 245));
        assert!(span("120-245").is_err());
    }
}
