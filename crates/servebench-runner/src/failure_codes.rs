//! Error codes recognised in request failures: a server that cannot apply its chat template
//! (`SB403`) and a server answering in another dialect than `--backend` (`SB404`). In the
//! readiness check they replace "endpoint not ready" (the run stops with the specific code);
//! after a run, failed requests with them give one coded warning each.

use servebench_client::dialect::{mentions_chat_template, WRONG_DIALECT};
use servebench_core::{BenchError, Outcome, RequestRecord};

/// The error of a readiness check that gave up after `secs` with `last_error`.
pub fn not_ready(secs: u64, last_error: String, backend: &str) -> BenchError {
    if mentions_chat_template(&last_error) {
        BenchError::ChatTemplate { detail: last_error }
    } else if last_error.starts_with(WRONG_DIALECT) {
        BenchError::WrongDialect { backend: backend.to_owned(), detail: last_error }
    } else {
        BenchError::EndpointNotReady { secs, last_error }
    }
}

/// Coded warnings for failed requests whose error is a chat-template or wrong-dialect failure.
pub fn warnings(records: &[RequestRecord], backend: &str) -> Vec<String> {
    let failed = || records.iter().filter(|r| r.outcome == Outcome::Failed).filter_map(|r| r.error.as_ref());
    let chat = failed().filter(|e| mentions_chat_template(&e.message)).count();
    let dialect = failed().filter(|e| e.message.starts_with(WRONG_DIALECT)).count();
    let mut out = Vec::new();
    if chat > 0 {
        let e =
            BenchError::ChatTemplate { detail: format!("{chat} requests failed with a chat template error") };
        out.push(format!("warning[{}]: {e}", e.code()));
    }
    if dialect > 0 {
        let detail = format!("{dialect} requests got OpenAI-style chunks");
        let e = BenchError::WrongDialect { backend: backend.to_owned(), detail };
        out.push(format!("warning[{}]: {e}", e.code()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::{ErrorCode, ErrorKind};

    #[test]
    fn classifies_chat_template_and_wrong_dialect() {
        let msg = "HTTP 400 Bad Request: {\"error\":{\"message\":\"As of transformers v4.44, default chat template is no longer allowed\"}}";
        assert_eq!(not_ready(5, msg.into(), "openai-chat").code(), ErrorCode::ChatTemplate);
        let wrong = format!("{WRONG_DIALECT}: --backend tgi got an OpenAI-style chunk");
        assert_eq!(not_ready(5, wrong.clone(), "tgi").code(), ErrorCode::WrongDialect);
        assert_eq!(not_ready(5, "HTTP 404".into(), "tgi").code(), ErrorCode::EndpointNotReady);

        let mut recs = Vec::new();
        for m in [msg, msg, wrong.as_str(), "HTTP 500"] {
            let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
            r.fail(ErrorKind::HttpStatus, m);
            recs.push(r);
        }
        let w = warnings(&recs, "tgi");
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("warning[SB403]: ") && w[0].contains("2 requests"), "{}", w[0]);
        assert!(w[1].starts_with("warning[SB404]: ") && w[1].contains("1 requests"), "{}", w[1]);
        assert!(warnings(&recs[3..], "tgi").is_empty());
    }
}
