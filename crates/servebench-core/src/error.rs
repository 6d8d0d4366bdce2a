//! One error taxonomy: every user-facing error has a stable code, a one-line message that names
//! the fix, and an explanation printed by `servebench explain CODE` (also in `docs/errors.md`).

use std::fmt;

/// Stable error codes. Never renumber: scripts and docs refer to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorCode {
    /// SB101: a flag has an invalid value.
    ConfigInvalid,
    /// SB102: a `vllm bench serve` flag that servebench does not support yet.
    FlagNotSupported,
    /// SB201: the tokenizer could not be loaded.
    TokenizerLoad,
    /// SB202: the tokenizer would have to be downloaded and the network is not available.
    TokenizerOffline,
    /// SB203: the workload could not be built (dataset problem).
    Dataset,
    /// SB301: the endpoint did not answer a test request successfully before the timeout.
    EndpointNotReady,
    /// SB302: `/tokenize` or `/detokenize` cannot be used (a warning: verification skipped).
    TokenizeUnavailable,
    /// SB303: `/tokenize` or `/detokenize` kept failing with 5xx or transport errors.
    TokenizeFailed,
    /// SB304: an HTTP/transport error outside a benchmark request (model list, tokenize, ...).
    Transport,
    /// SB305: the server answered a control request with an error status.
    HttpStatus,
    /// SB401: the server's response did not follow the expected API protocol.
    Protocol,
    /// SB402: the model could not be determined.
    ModelDetect,
    /// SB501: reading or writing a file failed.
    Io,
    /// SB601: the run finished but too many requests failed.
    FailureRate,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 14] = [
        ErrorCode::ConfigInvalid,
        ErrorCode::FlagNotSupported,
        ErrorCode::TokenizerLoad,
        ErrorCode::TokenizerOffline,
        ErrorCode::Dataset,
        ErrorCode::EndpointNotReady,
        ErrorCode::TokenizeUnavailable,
        ErrorCode::TokenizeFailed,
        ErrorCode::Transport,
        ErrorCode::HttpStatus,
        ErrorCode::Protocol,
        ErrorCode::ModelDetect,
        ErrorCode::Io,
        ErrorCode::FailureRate,
    ];

    /// The stable code, e.g. `SB101`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => "SB101",
            ErrorCode::FlagNotSupported => "SB102",
            ErrorCode::TokenizerLoad => "SB201",
            ErrorCode::TokenizerOffline => "SB202",
            ErrorCode::Dataset => "SB203",
            ErrorCode::EndpointNotReady => "SB301",
            ErrorCode::TokenizeUnavailable => "SB302",
            ErrorCode::TokenizeFailed => "SB303",
            ErrorCode::Transport => "SB304",
            ErrorCode::HttpStatus => "SB305",
            ErrorCode::Protocol => "SB401",
            ErrorCode::ModelDetect => "SB402",
            ErrorCode::Io => "SB501",
            ErrorCode::FailureRate => "SB601",
        }
    }

    /// Looks a code up by its text (case-insensitive; `sb101`, `SB101` and `101` all work).
    pub fn parse(text: &str) -> Option<ErrorCode> {
        let t = text.trim().to_ascii_uppercase();
        let t = if t.starts_with("SB") { t } else { format!("SB{t}") };
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == t)
    }

    /// A short title.
    pub fn title(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => "invalid configuration",
            ErrorCode::FlagNotSupported => "flag not supported yet",
            ErrorCode::TokenizerLoad => "tokenizer could not be loaded",
            ErrorCode::TokenizerOffline => "tokenizer download needed but offline",
            ErrorCode::Dataset => "workload could not be built",
            ErrorCode::EndpointNotReady => "endpoint not ready",
            ErrorCode::TokenizeUnavailable => "tokenize endpoint unavailable",
            ErrorCode::TokenizeFailed => "tokenize endpoint failing",
            ErrorCode::Transport => "HTTP/transport error",
            ErrorCode::HttpStatus => "server returned an error status",
            ErrorCode::Protocol => "backend protocol error",
            ErrorCode::ModelDetect => "model could not be determined",
            ErrorCode::Io => "file I/O error",
            ErrorCode::FailureRate => "failure rate exceeded",
        }
    }

    /// The full explanation: what it means, common causes, how to fix it.
    pub fn explain(self) -> &'static str {
        match self {
            ErrorCode::ConfigInvalid => {
                "\
A flag (or a combination of flags) has a value servebench cannot use. The run stops before any
network traffic. The message names the flag, the value it got and what it accepts.

Common causes:
  - a negative or zero --request-rate (use a positive number, or inf for no pacing)
  - --burstiness <= 0 (1.0 is a Poisson process; < 1 is burstier, > 1 smoother)
  - --random-range-ratio outside [0, 1), or JSON that does not parse
  - --ramp-up-strategy without both --ramp-up-start-rps and --ramp-up-end-rps, or start > end
  - --extra-body / --metadata / --header / --goodput in the wrong form

Fix: correct the flag as the message says; `servebench --help` lists every flag with its default."
            }
            ErrorCode::FlagNotSupported => {
                "\
The flag exists in `vllm bench serve` but servebench does not implement it yet. servebench refuses
it rather than silently ignoring it, because ignoring a flag would change what is measured.

Fix: drop the flag, or use an equivalent servebench flag if the message names one."
            }
            ErrorCode::TokenizerLoad => {
                "\
The tokenizer named by --tokenizer (or --model when --tokenizer is not given) could not be loaded.

servebench looks for, in order: a built-in tiktoken encoding (cl100k_base, o200k_base, p50k_base,
r50k_base, gpt2), a local tokenizer.json file or a directory containing one, a model id on the
Hugging Face Hub (when online), and finally the server's /tokenize endpoint.

Fix: pass --tokenizer with a path to a tokenizer.json (or its directory) or a built-in encoding."
            }
            ErrorCode::TokenizerOffline => {
                "\
The tokenizer is a Hugging Face model id that is not available locally, and servebench cannot
download it (no network, HF_HUB_OFFLINE set, or the download failed).

Fix: download tokenizer.json once on a machine with network access and pass
--tokenizer /path/to/tokenizer.json (or its directory); or use a built-in encoding such as
--tokenizer cl100k_base when exact model token counts do not matter."
            }
            ErrorCode::Dataset => {
                "\
The workload (prompts and output lengths) could not be built from the chosen dataset options.

Common causes: a dataset file that is missing, truncated or of the wrong format; lengths that the
tokenizer cannot reach exactly; --max-model-len smaller than every prompt.

Fix: follow the message; it names the file and line, or the option, at fault."
            }
            ErrorCode::EndpointNotReady => {
                "\
The readiness check sends the first benchmark request until it succeeds; it did not succeed
within --ready-check-timeout-sec. The last error is attached to the message.

Common causes: the server is still loading the model; wrong --base-url/--host/--port or
--endpoint; the model name is not served (HTTP 404); an auth header is missing (HTTP 401).

Fix: check the URL and model, raise --ready-check-timeout-sec for slow model loads, or pass
--ready-check-timeout-sec 0 to skip the check."
            }
            ErrorCode::TokenizeUnavailable => {
                "\
The server's /tokenize or /detokenize endpoint cannot be used to verify prompt lengths: it
answered 4xx (gateways such as llm-d return 400, others 404), a body of another shape, or an empty
token list for a non-empty prompt. This is a warning, not a failure: prompt-length verification is
skipped and the run goes on with the client tokenizer's counts.

Fix: nothing is required. For exact server-side lengths, point --base-url at a server that exposes
vLLM's /tokenize, or make sure --tokenizer is exactly the served model's tokenizer."
            }
            ErrorCode::TokenizeFailed => {
                "\
The server's /tokenize or /detokenize endpoint kept failing with 5xx or transport errors after
retries while verifying prompt lengths.

Fix: check the server's health and logs; or pass --skip-tokenize-verification to skip the check."
            }
            ErrorCode::Transport => {
                "\
An HTTP request outside the measured benchmark (model list, tokenize, readiness, profiling) could
not complete: connection refused, reset, TLS failure or timeout.

Fix: check that the server is running and reachable at the URL in the message; for self-signed
TLS certificates pass --insecure."
            }
            ErrorCode::HttpStatus => {
                "\
A control request (model list, tokenize, profiling, prefix-cache reset) got a non-2xx status.
The status and the first part of the body are in the message.

Fix: follow the server's message; 401/403 usually mean a missing OPENAI_API_KEY or --header."
            }
            ErrorCode::Protocol => {
                "\
The server's answer did not follow the API the chosen --backend speaks (for example a model list
without `data`, or a body that is not JSON).

Fix: check --backend and --endpoint match the server's API."
            }
            ErrorCode::ModelDetect => {
                "\
No --model was given, and the model could not be read from GET /v1/models.

Fix: pass --model (the served model name) explicitly."
            }
            ErrorCode::Io => {
                "\
Reading or writing a file failed (results, records, dataset, tokenizer). The path is named.

Fix: check the path exists and is writable, and that the disk is not full."
            }
            ErrorCode::FailureRate => {
                "\
The run finished and its results were written, but the share of failed requests exceeded
--max-failure-rate.

Fix: look at the error kinds in the result (`error_kinds`) and the records file."
            }
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the library. Each variant maps to one [`ErrorCode`].
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid {flag}: {problem}; fix: {fix}")]
    Config { flag: String, problem: String, fix: String },
    #[error(
        "{flag} is a `vllm bench serve` flag that servebench does not support yet; fix: remove it{hint}"
    )]
    FlagNotSupported { flag: String, hint: String },
    #[error("tokenizer '{name}' could not be loaded: {detail}; fix: pass --tokenizer with a tokenizer.json path or a built-in encoding (cl100k_base, o200k_base)")]
    TokenizerLoad { name: String, detail: String },
    #[error("tokenizer '{name}' is not available locally and cannot be downloaded ({detail}); fix: pass --tokenizer /path/to/tokenizer.json")]
    TokenizerOffline { name: String, detail: String },
    #[error("{detail}")]
    Dataset { detail: String },
    #[error("endpoint not ready after {secs} s: {last_error}; fix: check URL/model or raise --ready-check-timeout-sec")]
    EndpointNotReady { secs: u64, last_error: String },
    #[error("tokenize endpoint unavailable ({detail}); prompt-length verification skipped")]
    TokenizeUnavailable { detail: String },
    #[error(
        "tokenize endpoint failing: {detail}; fix: check the server, or pass --skip-tokenize-verification"
    )]
    TokenizeFailed { detail: String },
    #[error("{context}: {detail}; fix: check that the server is running at that URL")]
    Transport { context: String, detail: String },
    #[error("{context}: HTTP {status}: {body}")]
    HttpStatus { context: String, status: u16, body: String },
    #[error("{context}: {detail}; fix: check that --backend/--endpoint match the server's API")]
    Protocol { context: String, detail: String },
    #[error("could not determine the model from /v1/models: {detail}; fix: pass --model")]
    ModelDetect { detail: String },
    #[error("{path}: {detail}")]
    Io { path: String, detail: String },
    #[error("{failed} of {total} requests failed ({rate:.1}%), above --max-failure-rate {limit:.1}%")]
    FailureRate { failed: u64, total: u64, rate: f64, limit: f64 },
}

impl BenchError {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            BenchError::Config { .. } => ErrorCode::ConfigInvalid,
            BenchError::FlagNotSupported { .. } => ErrorCode::FlagNotSupported,
            BenchError::TokenizerLoad { .. } => ErrorCode::TokenizerLoad,
            BenchError::TokenizerOffline { .. } => ErrorCode::TokenizerOffline,
            BenchError::Dataset { .. } => ErrorCode::Dataset,
            BenchError::EndpointNotReady { .. } => ErrorCode::EndpointNotReady,
            BenchError::TokenizeUnavailable { .. } => ErrorCode::TokenizeUnavailable,
            BenchError::TokenizeFailed { .. } => ErrorCode::TokenizeFailed,
            BenchError::Transport { .. } => ErrorCode::Transport,
            BenchError::HttpStatus { .. } => ErrorCode::HttpStatus,
            BenchError::Protocol { .. } => ErrorCode::Protocol,
            BenchError::ModelDetect { .. } => ErrorCode::ModelDetect,
            BenchError::Io { .. } => ErrorCode::Io,
            BenchError::FailureRate { .. } => ErrorCode::FailureRate,
        }
    }

    /// Shorthand for a configuration error.
    pub fn config(flag: impl Into<String>, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        BenchError::Config { flag: flag.into(), problem: problem.into(), fix: fix.into() }
    }

    /// Shorthand for an I/O error on `path`.
    pub fn io(path: impl fmt::Display, err: impl fmt::Display) -> Self {
        BenchError::Io { path: path.to_string(), detail: err.to_string() }
    }

    /// The one-line form shown to users: `error[SB101]: ...`.
    pub fn user_line(&self) -> String {
        format!("error[{}]: {} (see `servebench explain {}`)", self.code(), self, self.code())
    }
}

/// Result alias for the library.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate code {c}");
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
            assert_eq!(ErrorCode::parse(&c.as_str().to_lowercase()), Some(c));
            assert!(c.explain().contains("Fix"), "{c} explanation names no fix");
        }
        assert_eq!(ErrorCode::parse("101"), Some(ErrorCode::ConfigInvalid));
        assert_eq!(ErrorCode::parse("SB999"), None);
    }

    #[test]
    fn user_line_names_code_and_fix() {
        let e = BenchError::config(
            "--request-rate",
            "must be > 0 or inf (got -1)",
            "pass a positive rate or inf",
        );
        let line = e.user_line();
        assert!(line.starts_with("error[SB101]: invalid --request-rate"));
        assert!(line.contains("fix: pass a positive rate"));
        assert!(!line.contains('\n'));
    }
}

/// The whole error catalogue as Markdown (the text of `docs/errors.md`).
pub fn errors_markdown() -> String {
    let mut out = String::from(
        "# Error codes\n\nEvery user-facing error of servebench has a stable code. \
         `servebench explain CODE` prints the entry; this file is generated from the same text \
         (a test keeps them identical).\n\nRequest-level failures (a request that got HTTP 503, a \
         stream cut mid-way) are not errors of the run: they become failed records with an error \
         kind (`connect`, `transport`, `http_status`, `protocol`, `event_too_large`, \
         `server_error`, `no_tokens`, `incomplete`, `timeout`), counted in the result under \
         `error_kinds`.\n",
    );
    for c in ErrorCode::ALL {
        out.push_str(&format!("\n## {} — {}\n\n```text\n{}\n```\n", c.as_str(), c.title(), c.explain()));
    }
    out
}

#[cfg(test)]
mod docs_tests {
    /// docs/errors.md is generated from `ErrorCode::explain`; set UPDATE_DOCS=1 to rewrite it.
    #[test]
    fn docs_errors_md_matches_explain_texts() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/errors.md");
        let expected = super::errors_markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &expected).unwrap();
        }
        let actual = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            actual == expected,
            "docs/errors.md is stale: run UPDATE_DOCS=1 cargo test -p servebench-core"
        );
    }
}
