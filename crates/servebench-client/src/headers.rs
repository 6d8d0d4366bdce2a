//! Request headers: `Content-Type`, `Accept-Encoding: identity`, the API key (`Authorization:
//! Bearer`, or Anthropic's `x-api-key`), then `--header` values. Every credential is a
//! [`Secret`] and its header value is marked sensitive (hidden from `Debug`).

use http::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use servebench_core::secret::{is_sensitive_header, Redactor, Secret};
use servebench_core::{BenchError, Result};

use crate::backend::{BackendKind, Dialect, TargetConfig};

/// Builds the header template: `Content-Type`, `Authorization` (marked sensitive), user headers.
/// `x-request-id` is added per request.
pub fn build_headers(cfg: &TargetConfig) -> Result<HeaderMap> {
    let mut h = HeaderMap::new();
    let content_type =
        if cfg.backend == BackendKind::Audio { crate::api::AUDIO_CONTENT_TYPE } else { "application/json" };
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Uncompressed answers (a `--header Accept-Encoding=...` below replaces it).
    h.insert(http::header::ACCEPT_ENCODING, crate::transport::coding::ACCEPT_IDENTITY);
    let anthropic = cfg.backend == BackendKind::Native(Dialect::Anthropic);
    if anthropic {
        crate::api::anthropic_headers(&mut h, cfg.api_key.as_ref())?;
    } else if let Some(key) = cfg.api_key.as_ref().map(Secret::expose).filter(|k| !k.is_empty()) {
        let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            BenchError::config(
                "OPENAI_API_KEY",
                "contains characters not allowed in a header",
                "check the key",
            )
        })?;
        v.set_sensitive(true);
        h.insert(AUTHORIZATION, v);
    }
    for (k, v) in &cfg.headers {
        let name = HeaderName::from_bytes(k.trim().as_bytes()).map_err(|_| {
            BenchError::config("--header", format!("invalid header name '{k}'"), "use --header Name=value")
        })?;
        // The value is not echoed: it may be a secret.
        let mut value = HeaderValue::from_str(v.expose().trim()).map_err(|_| {
            BenchError::config("--header", format!("invalid value for header '{k}'"), "use printable ASCII")
        })?;
        if is_sensitive_header(name.as_str()) {
            value.set_sensitive(true);
        }
        h.insert(name, value);
    }
    Ok(h)
}

/// The secrets of a target to redact from server text: the API key and the value of every
/// `--header` whose name is sensitive ([`is_sensitive_header`]).
pub fn redactor(cfg: &TargetConfig) -> Redactor {
    let mut r = Redactor::new();
    if let Some(key) = &cfg.api_key {
        r.add(key.expose());
        // The whole header value too: its base64 (a server echoing the header encoded) does
        // not contain the key's own base64.
        r.add(&format!("Bearer {}", key.expose()));
    }
    // A secret query value of the endpoint (`?token=…`): a server echoing the path.
    for value in cfg.endpoint.as_deref().map(servebench_core::secret::secret_query_values).unwrap_or_default()
    {
        r.add(value);
    }
    for (_, value) in cfg.headers.iter().filter(|(n, _)| is_sensitive_header(n)) {
        // `Bearer xyz`: the token alone may be echoed too.
        let v = value.expose();
        r.add(v);
        // `Basic …`: the password, and the pair, as a server may echo them decoded.
        if let Some((user, password)) = servebench_core::secret::basic_credentials(v) {
            r.add_credentials(&user, &password);
            if password.is_empty() {
                // A token given as the user name (`https://TOKEN@gw`).
                r.add(&user);
            }
        }
        if let Some((_, token)) = v.split_once(' ') {
            r.add(token);
        }
    }
    r
}

/// The API key of `backend` from the environment (`env` looks a variable up):
/// `ANTHROPIC_API_KEY` first for `anthropic`, else `OPENAI_API_KEY`. Empty values count as
/// unset. The key is a [`Secret`] from here on.
pub fn api_key_from_env(backend: BackendKind, env: impl Fn(&str) -> Option<String>) -> Option<Secret> {
    let get = |k: &str| env(k).filter(|v| !v.is_empty()).map(Secret::new);
    let anthropic = backend == BackendKind::Native(Dialect::Anthropic);
    anthropic.then(|| get("ANTHROPIC_API_KEY")).flatten().or_else(|| get("OPENAI_API_KEY"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TargetConfig {
        TargetConfig { model: "m".into(), ..TargetConfig::default() }
    }

    #[test]
    fn headers_mark_secrets_sensitive() {
        let mut c = cfg();
        c.api_key = Some("sk-secret".into());
        c.headers = vec![("X-Api-Key".into(), "v".into()), ("X-Trace".into(), "1".into())];
        let h = build_headers(&c).unwrap();
        assert!(h[AUTHORIZATION].is_sensitive());
        assert!(h["x-api-key"].is_sensitive());
        assert!(!h["x-trace"].is_sensitive());
        assert_eq!(h[CONTENT_TYPE], "application/json");
        assert!(!format!("{h:?}").contains("sk-secret"));
        c.headers = vec![("bad name".into(), "v".into())];
        assert!(build_headers(&c).is_err());
    }

    #[test]
    fn debug_of_the_target_config_never_shows_the_key_or_header_values() {
        let mut c = cfg();
        c.api_key = Some("sk-live-0123456789".into());
        c.headers = vec![("X-Session-Token".into(), "session=abcdef".into())];
        let shown = format!("{c:?} {c:#?}");
        assert!(!shown.contains("sk-live-0123456789") && !shown.contains("abcdef"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        let h = build_headers(&c).unwrap();
        assert!(h[AUTHORIZATION].is_sensitive() && h["x-session-token"].is_sensitive());
        assert_eq!(h[AUTHORIZATION], "Bearer sk-live-0123456789");
    }

    #[test]
    fn cookie_and_secret_headers_are_sensitive_by_the_core_rule() {
        let mut c = cfg();
        c.headers = vec![
            ("Cookie".into(), "session=cookie-planted-2323".into()),
            ("Proxy-Authorization".into(), "Basic cHJveHk=".into()),
            ("X-Client-Secret".into(), "cs-planted-77".into()),
            ("X-Trace".into(), "1".into()),
        ];
        let h = build_headers(&c).unwrap();
        for name in ["cookie", "proxy-authorization", "x-client-secret"] {
            assert!(h[name].is_sensitive(), "{name}");
        }
        assert!(!h["x-trace"].is_sensitive());
        assert_eq!(h["cookie"], "session=cookie-planted-2323");
        let shown = format!("{h:?} {c:?}");
        for secret in ["cookie-planted-2323", "cHJveHk=", "cs-planted-77"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }

    #[test]
    fn api_key_from_env_prefers_anthropic_key_for_anthropic() {
        let env = |k: &str| match k {
            "ANTHROPIC_API_KEY" => Some("ant".to_owned()),
            "OPENAI_API_KEY" => Some("oai".to_owned()),
            _ => None,
        };
        let key = |backend: BackendKind, env: &dyn Fn(&str) -> Option<String>| {
            api_key_from_env(backend, env).map(|k| k.expose().to_owned())
        };
        assert_eq!(key(BackendKind::Native(Dialect::Anthropic), &env).as_deref(), Some("ant"));
        assert_eq!(key(BackendKind::Completions, &env).as_deref(), Some("oai"));
        let only_openai = |k: &str| (k == "OPENAI_API_KEY").then(|| "oai".to_owned());
        assert_eq!(key(BackendKind::Native(Dialect::Anthropic), &only_openai).as_deref(), Some("oai"));
        assert_eq!(api_key_from_env(BackendKind::Native(Dialect::Tgi), |_| Some(String::new())), None);
    }
}
