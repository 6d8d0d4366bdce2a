//! Following redirects (RFC 9110 §15.4): control calls follow 301, 302, 303, 307 and 308;
//! generation requests follow 307 and 308 only (the method and body are kept; 301/302/303
//! would turn the POST into a GET). At most [`MAX_HOPS`] hops, no loops; a redirect to another
//! origin is followed with a warning and without the credentials (`Authorization`, API-key
//! headers: every header marked sensitive). The client remembers the final URL so the console
//! can say that redirects happened and suggest using it.
//!
//! Only the non-2xx path comes here: a 2xx answer costs one status comparison.

use std::time::Instant;

use bytes::Bytes;
use http::header::{HeaderMap, LOCATION};
use http::{Method, Request, StatusCode};
use url::Url;

use super::control::read_body;
use super::error::RequestBuildError;
use super::{ClientOptions, HttpClient, ReqBody, SendFailKind, SendFailure, Sent};
use servebench_core::{BenchError, FailureCause};

/// Most redirects followed for one request.
pub const MAX_HOPS: usize = 5;
/// Largest redirect body read (to keep the connection); a larger one closes it.
const MAX_REDIRECT_BODY: usize = 64 << 10;

/// What the client learned about redirects (for the console, said once).
#[derive(Debug, Default)]
pub(crate) struct RedirectLog {
    /// The last final URL a redirected request reached, and whether any redirect left the
    /// origin.
    pub final_url: Option<(String, bool)>,
    pub announced: bool,
    /// Clients of the other origins redirects led to (shared by later requests).
    pub others: Vec<HttpClient>,
}

/// A response that is not a redirect, with the client whose pool its connection belongs to.
#[derive(Debug)]
pub(crate) struct Followed {
    pub sent: Sent,
    /// The client of another origin a redirect led to (`None`: the calling client).
    pub other: Option<HttpClient>,
    /// When the first request of the chain started being written.
    pub first_dispatched: Instant,
}

/// Why a redirect's target cannot be requested (SB307 in the record's message).
#[derive(Debug, thiserror::Error)]
enum TargetError {
    #[error("redirect to '{0}' has no host")]
    NoHost(Url),
    /// No client can be made for the other origin (its TLS setup failed, say).
    #[error("redirect to {origin}: {source}")]
    Client { origin: String, source: Box<BenchError> },
    #[error(transparent)]
    Request(#[from] RequestBuildError),
}

fn is_redirect(s: StatusCode) -> bool {
    matches!(s.as_u16(), 301 | 302 | 303 | 307 | 308)
}

fn refused(message: String, dispatched: Option<Instant>, reconnects: u32) -> SendFailure {
    SendFailure {
        kind: SendFailKind::Transport,
        message,
        cause: Some(FailureCause::Redirect),
        dispatched,
        reconnects,
        resent: false,
    }
}

impl HttpClient {
    /// The URL of `path` on this client's origin.
    fn url_of(&self, path: &str) -> Option<Url> {
        Url::parse(&format!("{}{path}", self.origin())).ok()
    }

    /// A client for the origin of `url` (this one when it is the same origin).
    fn client_for(&self, url: &Url) -> Result<HttpClient, TargetError> {
        let origin = match (url.host_str(), url.port_or_known_default()) {
            (Some(h), Some(p)) => format!("{}://{h}:{p}", url.scheme()),
            _ => return Err(TargetError::NoHost(url.clone())),
        };
        if origin == self.origin() {
            return Ok(self.clone());
        }
        let mut log = self.lock_redirects();
        if let Some(c) = log.others.iter().find(|c| c.origin() == origin) {
            return Ok(c.clone());
        }
        let opts = ClientOptions { base_url: origin.clone(), ..self.inner.opts.clone() };
        let c = HttpClient::new(opts).map_err(|e| TargetError::Client { origin, source: Box::new(e) })?;
        log.others.push(c.clone());
        Ok(c)
    }

    fn lock_redirects(&self) -> std::sync::MutexGuard<'_, RedirectLog> {
        self.inner.redirects.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The one-line console notice that requests were redirected (with the final URL), once
    /// per client; `None` when nothing was redirected or it was said already.
    pub fn take_redirect_notice(&self) -> Option<String> {
        let mut log = self.lock_redirects();
        let (url, cross) = log.final_url.clone()?;
        if log.announced {
            return None;
        }
        log.announced = true;
        let cross = if cross { " (another origin: credentials were not sent there)" } else { "" };
        // The URL is the server's `Location`: server text, redacted like the rest.
        let url = self.redactor().redact(url.as_str()).into_owned();
        Some(format!(
            "requests were redirected to {url}{cross}; use that URL as --base-url/--endpoint to avoid \
             the extra round trip per request"
        ))
    }

    /// Sends `req`, following redirects as the module documentation says. `generation`:
    /// only 307/308 are followed. `written_mark`: see [`HttpClient::send`] (set by the chain's
    /// first request).
    pub(crate) async fn send_following(
        &self,
        mut req: Request<ReqBody>,
        generation: bool,
        mut deadline: Option<&mut std::pin::Pin<Box<tokio::time::Sleep>>>,
        mut written_mark: Option<&mut Option<Instant>>,
    ) -> Result<Followed, SendFailure> {
        // Hot path: one send, one status comparison; no clone of the client or the request.
        let mut other: Option<HttpClient> = None;
        let mut first_dispatched = None;
        let mut visited: Vec<Url> = Vec::new();
        let mut cross = false;
        loop {
            let client = other.as_ref().unwrap_or(self);
            // The mark is the chain's first request, like `first_dispatched`.
            let mark = if first_dispatched.is_none() { written_mark.as_deref_mut() } else { None };
            let sent = client.send(&req, deadline.as_deref_mut(), mark).await?;
            let first = *first_dispatched.get_or_insert(sent.dispatched);
            let status = sent.response.status();
            let location = match is_redirect(status) {
                true => sent.response.headers().get(LOCATION).cloned(),
                false => None,
            };
            let Some(location) = location else {
                if !visited.is_empty() {
                    let url = client.url_of(req.uri().path_and_query().map_or("/", |p| p.as_str()));
                    let final_url = url.map(|u| u.to_string()).unwrap_or_default();
                    self.lock_redirects().final_url = Some((final_url, cross));
                }
                return Ok(Followed { sent, other, first_dispatched: first });
            };
            let fail = |m: String| refused(m, Some(first), sent.reconnects);
            let code = status.as_u16();
            if generation && !matches!(code, 307 | 308) {
                return Err(fail(format!(
                    "the server answered HTTP {code} (redirect to '{}'); only 307 and 308 keep the POST \
                     and its body",
                    String::from_utf8_lossy(location.as_bytes())
                )));
            }
            let here = client.url_of(req.uri().path_and_query().map_or("/", |p| p.as_str()));
            let next = here
                .as_ref()
                .and_then(|h| h.join(location.to_str().ok()?).ok())
                .filter(|u| matches!(u.scheme(), "http" | "https"));
            let Some(next) = next else {
                return Err(fail(format!(
                    "HTTP {code} with an unusable Location '{}'",
                    location.to_str().unwrap_or("?")
                )));
            };
            if visited.len() >= MAX_HOPS {
                return Err(fail(format!("more than {MAX_HOPS} redirects (last to {next})")));
            }
            if let Some(h) = here {
                visited.push(h);
            }
            if visited.contains(&next) {
                return Err(fail(format!("redirect loop (back to {next})")));
            }
            // The redirect's own body is read (bounded) so its connection can be reused.
            let Sent { response, mut conn, .. } = sent;
            let mut incoming = response.into_body();
            if let Ok((_, true, _)) =
                read_body(&mut conn, &mut incoming, MAX_REDIRECT_BODY, deadline.as_deref_mut(), None).await
            {
                client.release(conn);
            }
            let target_failed = |e: TargetError| fail(e.to_string());
            let next_client = self.client_for(&next).map_err(target_failed)?;
            let mut headers = std::mem::take(req.headers_mut());
            if next_client.origin() != client.origin() {
                cross = cross || next_client.origin() != self.origin();
                strip_credentials(&mut headers);
                // The Host sent (the origin's, or a `--header Host` for it) named the old origin.
                headers.remove(http::header::HOST);
            }
            let (method, body) = if code == 303 && req.method() != Method::HEAD {
                (Method::GET, Bytes::new())
            } else {
                (req.method().clone(), req.body().clone())
            };
            let target = match next.query() {
                Some(q) => format!("{}?{q}", next.path()),
                None => next.path().to_owned(),
            };
            // Built by the next origin's client: its Host header, and the absolute form (and
            // proxy credentials) when it goes through an HTTP proxy.
            req = next_client
                .request(method, &target, headers, body)
                .map_err(|e| target_failed(TargetError::Request(e)))?;
            other = (next_client.origin() != self.origin()).then_some(next_client);
        }
    }
}

/// Removes every header marked sensitive (API keys, `Authorization`): they are not sent to
/// another origin.
fn strip_credentials(h: &mut HeaderMap) {
    let names: Vec<_> = h.iter().filter(|(_, v)| v.is_sensitive()).map(|(n, _)| n.clone()).collect();
    for n in names {
        h.remove(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn redirect_target_errors_keep_their_messages_and_sources() {
        let c =
            HttpClient::new(ClientOptions { base_url: "http://127.0.0.1:9".into(), ..Default::default() })
                .unwrap();
        let no_host = c.client_for(&Url::parse("data:text/plain,x").unwrap()).unwrap_err();
        assert_eq!(no_host.to_string(), "redirect to 'data:text/plain,x' has no host");
        let bad = c.request(Method::GET, "/a b", HeaderMap::new(), Bytes::new()).unwrap_err();
        let e = TargetError::from(bad);
        assert!(e.to_string().starts_with("invalid request: "), "{e}");
        assert!(e.source().and_then(|s| s.downcast_ref::<http::Error>()).is_some(), "{e:?}");
        let same = c.client_for(&Url::parse("http://127.0.0.1:9/v1").unwrap()).unwrap();
        assert_eq!(same.origin(), c.origin());
    }
}
