//! The prompt-length check of a run as the user sees it: the console lines, the warning
//! (SB302), and the `server_tokenize` key of the result JSON (docs/backends.md, "Server
//! tokenizer").

use serde_json::Value;
use servebench_core::{BenchError, Requests, Result, TextTokenizer};
use servebench_report::written::ServerTokenizeDoc;
use std::sync::Arc;

use crate::config::RunConfig;
use crate::observe::notice::Notice;
use crate::observe::observer::RunObserver;
use crate::prepare::server_tokenize::{ServerTokenize, TokenizeReport};
use crate::prepare::{self, Verification};

/// How the check ended and which `/tokenize` dialect was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCheck {
    pub verification: Verification,
    /// The detected dialect and paths (`None` when the server's tokenizer was not called).
    pub server: Option<TokenizeReport>,
}

impl PromptCheck {
    /// The `server_tokenize` object of the result JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.document()).unwrap_or_default()
    }

    /// The `server_tokenize` object of the result document, typed.
    pub fn document(&self) -> ServerTokenizeDoc {
        let (status, checked, fixed, unresolved, detail) = match &self.verification {
            Verification::Skipped => ("skipped", None, None, None, None),
            Verification::Cached { .. } => ("cached", None, None, None, None),
            Verification::Verified { checked } => ("verified", Some(*checked), None, None, None),
            Verification::Fixed { checked, fixed, unresolved } => {
                // "fixed" only when a prompt was rewritten: none rewritten, the lengths differ.
                let status = if *fixed == 0 { "mismatched" } else { "fixed" };
                (status, Some(*checked), Some(*fixed), Some(*unresolved), None)
            }
            Verification::Unavailable { detail } => ("unavailable", None, None, None, Some(detail.clone())),
        };
        let dialect = match (&self.server, &self.verification) {
            (Some(r), _) => Some(r.dialect.name().to_owned()),
            (None, Verification::Cached { dialect }) => dialect.clone().filter(|d| !d.is_empty()),
            _ => None,
        };
        let r = self.server.as_ref();
        let count = |n: Option<usize>| n.map(|n| n as u64);
        ServerTokenizeDoc {
            verification: status.to_owned(),
            dialect,
            servers: r.map(|r| r.servers.to_owned()),
            // Paths as sent carry the base URL's query: its secret values redacted here.
            tokenize_path: r.map(|r| servebench_core::secret::redact_url(&r.tokenize_path)),
            detokenize_path: r
                .and_then(|r| r.detokenize_path.as_deref().map(servebench_core::secret::redact_url)),
            checked: count(checked),
            fixed: count(fixed),
            unresolved: count(unresolved),
            detail,
        }
    }
}

/// Checks prompt lengths with the server (when a local tokenizer built them), says how it went
/// on the console, and adds warnings to `warnings`.
pub async fn check_prompts(
    server: &ServerTokenize,
    tokenizer: Option<&Arc<dyn TextTokenizer>>,
    cfg: &RunConfig,
    model: &str,
    workload: &mut Requests,
    observer: &Arc<dyn RunObserver>,
    warnings: &mut Vec<Notice>,
) -> Result<PromptCheck> {
    let verification = match tokenizer {
        Some(t) => {
            let cache = prepare::verification_cache_path(&cfg.base_url, model, t.name());
            prepare::verify_prompt_lengths(server, workload, cfg.verify_prompts, cache).await?
        }
        // Built on the server's own tokenizer: every prompt was already checked there.
        None => Verification::Skipped,
    };
    let report = server.report();
    if let Some(r) = &report {
        observer.message(&r.describe());
    }
    let tokenize_path = servebench_core::secret::redact_url(
        report.as_ref().map_or("/tokenize", |r| r.tokenize_path.as_str()),
    );
    let mut warn = |notice: Notice| {
        observer.message(&notice.to_string());
        warnings.push(notice.said());
    };
    match &verification {
        Verification::Unavailable { detail } => {
            let w = BenchError::TokenizeUnavailable { detail: detail.clone() };
            warn(Notice::coded(&w));
        }
        Verification::Fixed { fixed, unresolved, .. } => {
            let why = match (*unresolved > 0, server.detokenize_problem()) {
                (true, Some(p)) => format!(", {unresolved} could not be made exact ({p})"),
                (true, None) => format!(", {unresolved} could not be made exact"),
                (false, _) => String::new(),
            };
            warn(Notice::note(format!("Prompt lengths differed from the server's POST {tokenize_path}: rewrote {fixed} prompts{why}")));
        }
        Verification::Verified { checked } => observer.message(&format!(
            "Prompt lengths verified with the server's POST {tokenize_path} ({checked} prompts)"
        )),
        Verification::Cached { .. } | Verification::Skipped => {}
    }
    Ok(PromptCheck { verification, server: report })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::tokenize_dialect::TokenizeDialect;

    #[test]
    fn result_json_names_the_dialect_and_nulls_what_does_not_apply() {
        let report = TokenizeReport {
            dialect: TokenizeDialect::Content,
            servers: "llama.cpp",
            tokenize_path: "/gw/tokenize".into(),
            detokenize_path: Some("/gw/detokenize".into()),
        };
        let v = PromptCheck {
            verification: Verification::Fixed { checked: 5, fixed: 4, unresolved: 1 },
            server: Some(report),
        }
        .to_json();
        assert_eq!(v["verification"], "fixed");
        assert_eq!(
            (v["dialect"].as_str(), v["tokenize_path"].as_str()),
            (Some("content"), Some("/gw/tokenize"))
        );
        assert_eq!(
            (v["checked"].as_u64(), v["fixed"].as_u64(), v["unresolved"].as_u64()),
            (Some(5), Some(4), Some(1))
        );
        assert!(v["detail"].is_null());

        // Lengths differed and none could be rewritten (a TGI-like server without
        // /detokenize): "fixed" claimed a correction that never happened.
        let none_fixed = PromptCheck {
            verification: Verification::Fixed { checked: 3, fixed: 0, unresolved: 3 },
            server: None,
        }
        .to_json();
        assert_eq!(none_fixed["verification"], "mismatched");
        assert_eq!((none_fixed["fixed"].as_u64(), none_fixed["unresolved"].as_u64()), (Some(0), Some(3)));

        let cached = PromptCheck {
            verification: Verification::Cached { dialect: Some("inputs".into()) },
            server: None,
        };
        assert_eq!(cached.to_json()["dialect"], "inputs");
        let old_cache = PromptCheck { verification: Verification::Cached { dialect: None }, server: None };
        assert!(old_cache.to_json()["dialect"].is_null());
        let skipped = PromptCheck { verification: Verification::Skipped, server: None }.to_json();
        assert_eq!(skipped["verification"], "skipped");
        assert!(skipped["tokenize_path"].is_null() && skipped["checked"].is_null());
    }
}
