//! The server's own tokenizer: `/tokenize` and `/detokenize` in whichever dialect the server
//! speaks (`tokenize_dialect.rs`), detected once per run.
//!
//! Detection sends a known prompt ([`PROBE_TEXT`]) in each dialect in turn (vLLM/SGLang's
//! `prompt`, llama.cpp's `content`, TGI's `inputs`, then `text`) to the server-root
//! `/tokenize` and, when that route does not exist, to `/v1/tokenize` (SGLang serves both).
//! The first dialect that answers a non-empty token list wins. Classification, as vLLM
//! treats its one dialect: 400/422 or an answer of another shape (llama.cpp answers 200 with an
//! *empty* list to a `prompt` body) means "another dialect, try the next"; 404/405 means "no
//! such route here"; other 4xx mean "unusable" (a one-line warning, SB302); 5xx are retried
//! and, if no dialect works, fatal (SB303); a transport failure is the server being
//! unreachable (SB304).

use bytes::Bytes;
use http::Method;
use serde::Serialize;
use servebench_client::transport::HttpClient;
use servebench_core::text::one_line;
use servebench_core::{BenchError, Result};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

use crate::prepare::tokenize_dialect::{parse_text, parse_tokens, TokenizeDialect};

/// The known prompt of the detection: ordinary words every tokenizer turns into tokens.
pub const PROBE_TEXT: &str = "The quick brown fox jumps over the lazy dog.";

/// Bytes of a server body quoted in a detection note (several notes share one line).
const NOTE_BYTES: usize = 120;

/// What detection found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenizeReport {
    /// The dialect that answered (`prompt`, `content`, `inputs`, `text`).
    pub dialect: TokenizeDialect,
    /// Servers known to speak it (for the console).
    pub servers: &'static str,
    /// The request path of `/tokenize` (base prefix included).
    pub tokenize_path: String,
    /// The request path of `/detokenize`, once it answered (`None`: not used or not served).
    pub detokenize_path: Option<String>,
}

impl TokenizeReport {
    /// The console line.
    pub fn describe(&self) -> String {
        format!(
            "Server tokenizer: POST {} speaks the `{}` dialect ({})",
            servebench_core::secret::redact_url(&self.tokenize_path),
            self.dialect.name(),
            self.servers
        )
    }
}

/// The outcome of one call to the server's tokenizer: the answer, or why the endpoint cannot
/// be used (a warning, SB302). Failures that stop the run (SB303, SB304) are the error of the
/// `Result` around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe<T> {
    Ok(T),
    /// Why the endpoint cannot be used (one line, with what the server said).
    Unavailable(String),
}

impl<T> Probe<T> {
    /// The answer, if there is one.
    pub fn ok(self) -> Option<T> {
        match self {
            Probe::Ok(v) => Some(v),
            Probe::Unavailable(_) => None,
        }
    }

    /// The answer, or `unavailable(why)` as the error.
    pub fn or_unavailable<E>(self, unavailable: impl FnOnce(String) -> E) -> std::result::Result<T, E> {
        match self {
            Probe::Ok(v) => Ok(v),
            Probe::Unavailable(why) => Err(unavailable(why)),
        }
    }

    /// The answer, by reference.
    pub fn value(&self) -> Option<&T> {
        match self {
            Probe::Ok(v) => Some(v),
            Probe::Unavailable(_) => None,
        }
    }
}

/// One answer, classified.
enum Answer {
    Ok(Bytes),
    /// 400/422: the body was not understood (another dialect).
    Rejected(String),
    /// 404/405: no such route.
    NoRoute(String),
    /// Any other 4xx: unusable.
    Refused(String),
    /// 5xx after the retries.
    ServerError(String),
}

/// Talks to `/tokenize` and `/detokenize`, in the dialect detected on first use.
#[derive(Debug, Clone)]
pub struct ServerTokenize {
    client: HttpClient,
    headers: http::HeaderMap,
    model: String,
    /// The detected dialect, or why none works.
    detected: Arc<OnceCell<Probe<TokenizeReport>>>,
    /// The `/detokenize` path once it answered, or why it cannot be used.
    detokenize: Arc<OnceCell<Probe<String>>>,
}

impl ServerTokenize {
    pub fn new(client: HttpClient, headers: http::HeaderMap, model: impl Into<String>) -> Self {
        ServerTokenize {
            client,
            headers,
            model: model.into(),
            detected: Arc::default(),
            detokenize: Arc::default(),
        }
    }

    /// What detection found, if it ran and succeeded (with the `/detokenize` path once used).
    pub fn report(&self) -> Option<TokenizeReport> {
        let mut r = self.detected.get()?.value()?.clone();
        r.detokenize_path = self.detokenize.get().and_then(Probe::value).cloned();
        Some(r)
    }

    /// Why `/detokenize` cannot be used, once a call found out.
    pub fn detokenize_problem(&self) -> Option<String> {
        match self.detokenize.get()? {
            Probe::Unavailable(why) => Some(why.clone()),
            Probe::Ok(_) => None,
        }
    }

    /// POSTs `body` to `path` (a full request path). 5xx and transport failures are retried
    /// (`attempts` in all); a transport failure that persists is returned as the error (SB304,
    /// or at once the coded error of a certificate or proxy failure).
    async fn post(&self, path: &str, body: &serde_json::Value, attempts: u32) -> Result<Answer> {
        let payload = Bytes::from(serde_json::to_vec(body).unwrap_or_default());
        let url = self.client.url_for_path(path);
        let mut last = String::new();
        for attempt in 0..attempts.max(1) {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
            }
            let r =
                match self.client.request_raw(Method::POST, &url, &self.headers, Some(payload.clone())).await
                {
                    Ok(r) => r,
                    // Plain transport failures are retried; a coded one (an untrusted
                    // certificate, a refusing proxy) will not pass, and is returned at once.
                    Err(BenchError::Transport { .. }) if attempt + 1 < attempts.max(1) => continue,
                    Err(e) => return Err(e),
                };
            let said = format!(
                "POST {} answered HTTP {}: {}",
                servebench_core::secret::redact_url(path),
                r.status,
                one_line(&r.snippet(), NOTE_BYTES)
            );
            return Ok(match r.status {
                200..=299 => Answer::Ok(r.body),
                400 | 422 => Answer::Rejected(said),
                404 | 405 => Answer::NoRoute(said),
                400..=499 => Answer::Refused(said),
                _ => {
                    last = said;
                    continue;
                }
            });
        }
        Ok(Answer::ServerError(last))
    }

    /// The detected dialect and path, or why no dialect works (a warning).
    async fn detect(&self) -> Result<Probe<TokenizeReport>> {
        self.detected.get_or_try_init(|| self.run_detection()).await.cloned()
    }

    async fn run_detection(&self) -> Result<Probe<TokenizeReport>> {
        let mut paths = vec![self.client.control_path_for("/tokenize")?];
        let v1 = self.client.control_path_for("/v1/tokenize")?;
        if !paths.contains(&v1) {
            paths.push(v1);
        }
        let mut notes: Vec<String> = Vec::new();
        let mut server_error = None;
        for path in &paths {
            for dialect in TokenizeDialect::ALL {
                // 5xx: retried for the first call only, so a failing server costs one backoff.
                let attempts = if server_error.is_none() { 4 } else { 1 };
                let body = dialect.tokenize_body(&self.model, PROBE_TEXT);
                let name = dialect.name();
                match self.post(path, &body, attempts).await? {
                    Answer::Ok(raw) => match parse_tokens(&raw) {
                        Ok(ids) if !ids.is_empty() => {
                            return Ok(Probe::Ok(TokenizeReport {
                                dialect,
                                servers: dialect.servers(),
                                tokenize_path: path.clone(),
                                detokenize_path: None,
                            }))
                        }
                        Ok(_) => notes.push(format!("`{name}`: an empty token list")),
                        Err(shape) => notes.push(format!("`{name}`: {shape}")),
                    },
                    Answer::Rejected(said) => notes.push(format!("`{name}`: {said}")),
                    Answer::NoRoute(said) => {
                        notes.push(said);
                        break;
                    }
                    Answer::Refused(said) => return Ok(Probe::Unavailable(said)),
                    Answer::ServerError(said) => {
                        notes.push(format!("`{name}`: {said}"));
                        server_error = Some(said);
                    }
                }
            }
        }
        if let Some(detail) = server_error {
            return Err(BenchError::TokenizeFailed { detail });
        }
        Ok(Probe::Unavailable(format!("no /tokenize dialect answered a token list ({})", notes.join("; "))))
    }

    /// Token ids of `text` on the server (with the special tokens it adds), or why the
    /// endpoint cannot be used.
    pub async fn tokenize(&self, text: &str) -> Result<Probe<Vec<u32>>> {
        let found = match self.detect().await? {
            Probe::Ok(f) => f,
            Probe::Unavailable(detail) => return Ok(Probe::Unavailable(detail)),
        };
        let body = found.dialect.tokenize_body(&self.model, text);
        let path = &found.tokenize_path;
        let raw = match self.post(path, &body, 4).await? {
            Answer::Ok(raw) => raw,
            Answer::Rejected(s) | Answer::NoRoute(s) | Answer::Refused(s) => {
                return Ok(Probe::Unavailable(s))
            }
            Answer::ServerError(detail) => return Err(BenchError::TokenizeFailed { detail }),
        };
        match parse_tokens(&raw) {
            Ok(ids) if ids.is_empty() && !text.is_empty() => Ok(Probe::Unavailable(format!(
                "POST {path} answered an empty token list for a non-empty prompt"
            ))),
            Ok(ids) => Ok(Probe::Ok(ids)),
            Err(shape) => Ok(Probe::Unavailable(format!("POST {path} answered {shape}"))),
        }
    }

    /// The `/detokenize` path next to the detected `/tokenize`, or why there is none.
    fn detokenize_path(found: &TokenizeReport) -> Probe<String> {
        if !found.dialect.has_detokenize() {
            return Probe::Unavailable(format!(
                "the `{}` dialect ({}) has no /detokenize",
                found.dialect.name(),
                found.dialect.servers()
            ));
        }
        let p = &found.tokenize_path;
        Probe::Ok(match p.strip_suffix("tokenize") {
            Some(head) => format!("{head}detokenize"),
            None => p.clone(),
        })
    }

    /// Text of `ids` on the server, or why the endpoint cannot be used.
    pub async fn detokenize(&self, ids: &[u32]) -> Result<Probe<String>> {
        let found = match self.detect().await? {
            Probe::Ok(f) => f,
            Probe::Unavailable(detail) => return Ok(Probe::Unavailable(detail)),
        };
        let unusable = |d: String| {
            let _ = self.detokenize.set(Probe::Unavailable(d.clone()));
            Ok(Probe::Unavailable(d))
        };
        let path = match self.detokenize.get() {
            Some(Probe::Unavailable(d)) => return Ok(Probe::Unavailable(d.clone())),
            Some(Probe::Ok(p)) => p.clone(),
            None => match Self::detokenize_path(&found) {
                Probe::Ok(p) => p,
                Probe::Unavailable(d) => return unusable(d),
            },
        };
        let body = found.dialect.detokenize_body(&self.model, ids);
        match self.post(&path, &body, 4).await? {
            Answer::Ok(raw) => match parse_text(&raw) {
                Ok(text) => {
                    let _ = self.detokenize.set(Probe::Ok(path));
                    Ok(Probe::Ok(text))
                }
                Err(shape) => unusable(format!("POST {path} answered {shape}")),
            },
            Answer::Rejected(s) | Answer::NoRoute(s) | Answer::Refused(s) => unusable(s),
            Answer::ServerError(detail) => Err(BenchError::TokenizeFailed { detail }),
        }
    }
}
