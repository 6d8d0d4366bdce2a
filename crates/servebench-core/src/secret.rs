//! Secrets: a value (API key, credential header, token) whose `Debug` and `Display` never
//! show it, and the one rule that says which header names carry one.

use std::fmt;

/// A secret value (API key, auth header value) whose `Debug`/`Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself; only for putting on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Header names whose values are secrets (compared case-insensitively): the one rule the
/// client uses to mark `--header` values sensitive (hidden from `Debug`, dropped on a
/// cross-origin redirect). `Authorization`, `Proxy-Authorization`, `Cookie`, and every name
/// containing `auth`, `key`, `token`, `secret`, `password` or `credential`.
pub fn is_sensitive_header(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    n == "cookie"
        || ["auth", "key", "token", "secret", "password", "credential"].iter().any(|part| n.contains(part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_header_names_are_sensitive_and_others_not() {
        for name in [
            "Authorization",
            "Proxy-Authorization",
            "Cookie",
            "X-Api-Key",
            "api_key",
            "X-Key",
            "X-Session-Token",
            "X-Client-Secret",
            "X-Auth",
        ] {
            assert!(is_sensitive_header(name), "{name}");
        }
        for name in ["X-Session-ID", "X-Trace", "Accept-Encoding", "Content-Type"] {
            assert!(!is_sensitive_header(name), "{name}");
        }
    }

    #[test]
    fn debug_and_display_never_show_the_value() {
        let s = Secret::new("sk-123");
        assert_eq!(s.expose(), "sk-123");
        assert!(!format!("{s:?} {s}").contains("sk-123"));
    }
}
