//! Secrets: a value (API key, credential header, token) whose `Debug` and `Display` never
//! show it, the one rule that says which header names carry one, and the [`Redactor`] that
//! removes the run's secrets from server-provided text before it is stored or printed.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;

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

/// Whether a URL query parameter named `name` carries a secret: a sensitive header's name
/// ([`is_sensitive_header`]: `api-key`, `token`, …) or a signed URL's (`sig`, `signature`: SAS
/// tokens; `code`: Azure Functions keys).
pub fn is_secret_query_name(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    is_sensitive_header(&n) || matches!(n.as_str(), "sig" | "signature" | "code" | "x-amz-signature")
}

/// What a redacted secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// A URL as a user may have typed it (valid or not, with or without `scheme://`), for messages
/// and files: the password of its userinfo (`user:pw@host`: everything after the user's `:`
/// up to the last `@`; a lone user name, which may be a token, whole) and the values of query
/// parameters whose names carry a secret (`?api-key=…`, by [`is_sensitive_header`]'s rule) are
/// replaced with [`REDACTED`]. An `@` in a path (`http://h/a@b`) is left alone.
pub fn redact_url(url: &str) -> String {
    let (before_query, tail) = match url.find('?') {
        Some(q) => url.split_at(q),
        None => (url, ""),
    };
    format!("{}{}", redact_userinfo(before_query), redact_query(tail))
}

/// `text` (a URL without its query) with the password of its userinfo redacted.
fn redact_userinfo(text: &str) -> String {
    let (scheme, rest) = match text.find("://") {
        Some(i) => text.split_at(i + 3),
        None => ("", text),
    };
    let Some(at) = rest.rfind('@') else { return text.to_owned() };
    let (userinfo, host) = (&rest[..at], &rest[at + 1..]);
    match userinfo.find(':') {
        Some(colon) => format!("{scheme}{}:{REDACTED}@{host}", &userinfo[..colon]),
        None if !userinfo.is_empty() && !userinfo.contains('/') => format!("{scheme}{REDACTED}@{host}"),
        None => text.to_owned(),
    }
}

/// The credentials of a URL's userinfo (`scheme://user:password@host…`), percent-decoded: what
/// an HTTP client sends as `Authorization: Basic` (aiohttp, vLLM's client, does). `None` without
/// userinfo (an `@` in the path is not one).
pub fn url_credentials(url: &str) -> Option<(String, String)> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (userinfo, _) = authority.rsplit_once('@').filter(|(u, _)| !u.is_empty())?;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    Some((percent_decode(user), percent_decode(password)))
}

/// `url` without its userinfo (`scheme://user:pw@host/p` → `scheme://host/p`).
pub fn url_without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// The `Authorization` value of HTTP Basic credentials: `Basic base64(user:password)`.
pub fn basic_authorization(user: &str, password: &str) -> String {
    use base64::Engine as _;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// The `user` and `password` of a `Basic` authorization value, if it is one.
pub fn basic_credentials(value: &str) -> Option<(String, String)> {
    use base64::Engine as _;
    let encoded = value.strip_prefix("Basic ").or_else(|| value.strip_prefix("basic "))?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// The values of the secret-named query parameters of `url` (`?api-key=…&token=…`), for a
/// [`Redactor`]: a server echoing the request's path puts them in its error text.
pub fn secret_query_values(url: &str) -> Vec<&str> {
    let Some((_, query)) = url.split_once('?') else { return Vec::new() };
    let query = query.split('#').next().unwrap_or_default();
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .filter(|(name, v)| is_secret_query_name(name) && !v.is_empty())
        .map(|(_, v)| v)
        .collect()
}

/// `tail` (path, query, fragment) with the values of secret-named query parameters redacted.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else { return tail.to_owned() };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((name, _)) if is_secret_query_name(name) => format!("{name}={REDACTED}"),
            _ => p.to_owned(),
        })
        .collect();
    let fragment = fragment.map(|f| format!("#{f}")).unwrap_or_default();
    format!("{path}?{}{fragment}", params.join("&"))
}

/// Secrets shorter than this are not searched for in text: replacing a one- or two-character
/// value everywhere would destroy every message while hiding nothing a reader could not guess.
pub const MIN_REDACTED_CHARS: usize = 4;

/// The run's secrets, built once from the configuration (API key, sensitive `--header`
/// values, proxy credentials), and applied to every piece of server-provided text (error
/// bodies, failure messages, generated text) where it enters a record or an error. A server
/// that echoes the request's `Authorization` header into its error body then shows
/// `<redacted>` instead of the key, in every output built from that text.
///
/// Each secret is searched in the forms a server may echo it in: as sent, percent-encoded,
/// JSON-escaped and base64 (a `Basic` credential). [`Redactor::add_credentials`] adds a
/// `user:password` pair the way `Proxy-Authorization: Basic` carries it.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret that contains another is replaced whole.
    needles: Arc<Vec<String>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} forms)", self.needles.len())
    }
}

impl Redactor {
    /// A redactor without secrets (text passes unchanged).
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Whether it has nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// Adds a secret value (in all its forms). Values shorter than [`MIN_REDACTED_CHARS`]
    /// are ignored.
    pub fn add(&mut self, secret: &str) -> &mut Self {
        let forms = secret_forms(secret);
        self.push(forms);
        self
    }

    /// Adds a `user:password` credential (a proxy URL's userinfo): the password alone,
    /// `user:password`, and their base64 forms (`Basic` credentials), each as given and
    /// percent-decoded.
    pub fn add_credentials(&mut self, user: &str, password: &str) -> &mut Self {
        for (user, password) in
            [(user.to_owned(), password.to_owned()), (percent_decode(user), percent_decode(password))]
        {
            let mut forms = secret_forms(&password);
            if !password.is_empty() || user.chars().count() >= MIN_REDACTED_CHARS {
                forms.extend(secret_forms(&format!("{user}:{password}")));
            }
            self.push(forms);
        }
        self
    }

    /// Adds every secret of `other`.
    pub fn merge(&mut self, other: &Redactor) -> &mut Self {
        self.push(other.needles.iter().cloned().collect());
        self
    }

    fn push(&mut self, forms: Vec<String>) {
        let needles = Arc::make_mut(&mut self.needles);
        for f in forms {
            if !needles.contains(&f) {
                needles.push(f);
            }
        }
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }

    /// `text` with every secret replaced by [`REDACTED`] (borrowed when nothing matched).
    ///
    /// Server text is cut to a length before it reaches a record (`core::text::one_line` marks
    /// the cut with `…`), and a cut may fall inside an echoed secret: the part of a secret that
    /// stands right before a cut mark (at least [`MIN_CUT_PREFIX`] characters) is replaced too.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for n in self.needles.iter() {
            if out.contains(n.as_str()) {
                out = Cow::Owned(out.replace(n.as_str(), REDACTED));
            }
        }
        if !self.needles.is_empty() && out.contains(CUT_MARK) {
            if let Some(masked) = mask_cut_prefixes(&out, &self.needles) {
                out = Cow::Owned(masked);
            }
        }
        out
    }

    /// Redacts `text` in place.
    pub fn redact_in_place(&self, text: &mut String) {
        if let Cow::Owned(r) = self.redact(text) {
            *text = r;
        }
    }

    /// `bytes` with every secret replaced (bytes need not be UTF-8; borrowed when nothing
    /// matched).
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out = Cow::Borrowed(bytes);
        for n in self.needles.iter() {
            let n = n.as_bytes();
            if find(&out, n).is_some() {
                out = Cow::Owned(replace_bytes(&out, n, REDACTED.as_bytes()));
            }
        }
        out
    }
}

/// The mark `core::text::one_line` leaves where it cut server text.
const CUT_MARK: char = '…';

/// The shortest part of a secret before a cut mark that is replaced (shorter ones are the
/// common first characters of many values, `sk`, and say nothing).
pub const MIN_CUT_PREFIX: usize = 3;

/// `text` with the longest beginning of any secret form that stands right before each cut
/// mark replaced by [`REDACTED`]; `None` when there is none.
fn mask_cut_prefixes(text: &str, needles: &[String]) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut masked = false;
    while let Some(i) = rest.find(CUT_MARK) {
        let before = &rest[..i];
        let cut = longest_cut_prefix(before, needles);
        out.push_str(&before[..before.len() - cut]);
        if cut > 0 {
            out.push_str(REDACTED);
            masked = true;
        }
        out.push(CUT_MARK);
        rest = &rest[i + CUT_MARK.len_utf8()..];
    }
    out.push_str(rest);
    masked.then_some(out)
}

/// Bytes of the longest proper beginning of a needle (at least [`MIN_CUT_PREFIX`] characters)
/// that `before` ends with; 0 when none.
fn longest_cut_prefix(before: &str, needles: &[String]) -> usize {
    needles
        .iter()
        .filter_map(|n| {
            let ends: Vec<usize> = n.char_indices().map(|(i, _)| i).skip(MIN_CUT_PREFIX).collect();
            ends.into_iter().rev().find(|&k| before.ends_with(&n[..k]))
        })
        .max()
        .unwrap_or(0)
}

/// The parts of `secret`'s base64 that stay the same wherever it stands in a longer encoded
/// value (`user:secret`, several values run together): for each of the three byte alignments,
/// the characters computed from the secret's bytes alone. Only for secrets of at least 8
/// bytes, whose forms are long enough not to match unrelated text.
fn base64_alignments(secret: &str, engine: &impl base64::Engine) -> Vec<String> {
    if secret.len() < 8 {
        return Vec::new();
    }
    (0..3usize)
        .map(|offset| {
            let mut bytes = vec![0u8; offset];
            bytes.extend_from_slice(secret.as_bytes());
            let encoded = engine.encode(&bytes);
            let skip = (offset * 8).div_ceil(6);
            let keep = bytes.len() * 8 / 6;
            encoded.get(skip..keep).unwrap_or_default().to_owned()
        })
        .collect()
}

/// The forms a secret may be echoed in: as is, percent-encoded, JSON-escaped (also with `\/`),
/// base64 (whole, and at every alignment inside a longer encoded value).
fn secret_forms(secret: &str) -> Vec<String> {
    let secret = secret.trim();
    if secret.chars().count() < MIN_REDACTED_CHARS {
        return Vec::new();
    }
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json.trim_matches('"');
    let mut forms = vec![
        secret.to_owned(),
        percent_encode(secret),
        json.to_owned(),
        json.replace('/', "\\/"),
        base64::engine::general_purpose::STANDARD.encode(secret),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
    ];
    forms.extend(base64_alignments(secret, &base64::engine::general_purpose::STANDARD));
    forms.extend(base64_alignments(secret, &base64::engine::general_purpose::URL_SAFE_NO_PAD));
    forms.sort();
    forms.dedup();
    forms
}

/// Percent-encodes every byte outside RFC 3986's unreserved set.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes (invalid escapes and non-UTF-8 results are kept as given).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

fn replace_bytes(hay: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(i) = find(rest, needle) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(with);
        rest = &rest[i + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins URLs in messages and files: a password in the userinfo and a secret-named query
    /// parameter are redacted, valid URL or not (an invalid `--base-url` was echoed whole).
    #[test]
    fn urls_lose_their_passwords_and_secret_query_values() {
        assert_eq!(redact_url("http://u:pw@h:1/v1"), "http://u:<redacted>@h:1/v1");
        assert_eq!(
            redact_url("http://user:SECRETpw@127.0.0.1:99999/"),
            "http://user:<redacted>@127.0.0.1:99999/"
        );
        assert_eq!(redact_url("http://u:SECRET@[::1"), "http://u:<redacted>@[::1");
        assert_eq!(redact_url("http://h:1/v1"), "http://h:1/v1");
        assert_eq!(redact_url("h:1"), "h:1");
        assert_eq!(
            redact_url("https://h/v1?api-key=qsSECRET&model=m&Token=t#frag"),
            "https://h/v1?api-key=<redacted>&model=m&Token=<redacted>#frag"
        );
        assert_eq!(redact_url("http://u:p@h?x=1"), "http://u:<redacted>@h?x=1");
        assert_eq!(redact_url("http://h/a@b"), "http://h/a@b", "an @ in the path is no userinfo");
        // Pins typed URLs without `scheme://`, other schemes, and a password holding `/`: the
        // password was echoed (an adversarial pass).
        assert_eq!(redact_url("user:pw1@127.0.0.1:19301"), "user:<redacted>@127.0.0.1:19301");
        assert_eq!(redact_url("https//user:pw1@h"), "https//user:<redacted>@h");
        assert_eq!(redact_url("ftp://user:pw1@h/x"), "ftp://user:<redacted>@h/x");
        assert_eq!(redact_url("http://user:p/w@host/v1"), "http://user:<redacted>@host/v1");
        assert_eq!(redact_url("https://ghp_TOKEN@host/x"), "https://<redacted>@host/x");
        assert_eq!(redact_url("/v1/completions?token=S8&x=1"), "/v1/completions?token=<redacted>&x=1");
        assert_eq!(secret_query_values("/v1/c?token=S8&x=1&api-key=K9#f"), vec!["S8", "K9"]);
        // Signed URLs: SAS signatures and Azure Functions keys.
        assert_eq!(secret_query_values("/f?sig=AB12&code=CD34&sv=2024"), vec!["AB12", "CD34"]);
        assert_eq!(redact_url("http://h/f?code=CD34&x=1"), "http://h/f?code=<redacted>&x=1");
        assert!(secret_query_values("/v1/c").is_empty());
    }

    #[test]
    fn url_credentials_decode_and_make_a_basic_authorization() {
        let (u, p) = url_credentials("http://alice:pw%40x@host:8000/v1?a=b").unwrap();
        assert_eq!((u.as_str(), p.as_str()), ("alice", "pw@x"));
        assert_eq!(url_credentials("https://tok@h").unwrap(), ("tok".into(), String::new()));
        assert_eq!(url_credentials("http://h/a@b"), None, "an @ in the path is not userinfo");
        assert_eq!(url_credentials("http://h:1"), None);
        assert_eq!(url_credentials("http://@h:1"), None, "empty userinfo: no credentials");
        assert_eq!(url_without_userinfo("http://alice:pw@h:1/v1?x=@"), "http://h:1/v1?x=@");
        assert_eq!(url_without_userinfo("http://h/a@b"), "http://h/a@b");
        let basic = basic_authorization("alice", "pw@x");
        assert_eq!(basic, "Basic YWxpY2U6cHdAeA==");
        assert_eq!(basic_credentials(&basic), Some(("alice".into(), "pw@x".into())));
        assert_eq!(basic_credentials("Bearer sk"), None);
    }

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

    #[test]
    fn the_redactor_removes_a_secret_in_every_echoed_form() {
        let mut r = Redactor::new();
        r.add("sk-live/+key=1");
        let b64 = base64::engine::general_purpose::STANDARD.encode("sk-live/+key=1");
        let text = format!(
            "bad key: Bearer sk-live/+key=1; url sk-live%2F%2Bkey%3D1; json sk-live\\/+key=1; b64 {b64}"
        );
        let out = r.redact(&text);
        assert_eq!(out, "bad key: Bearer <redacted>; url <redacted>; json <redacted>; b64 <redacted>");
        let out = r.redact_bytes(b"\xff bytes sk-live/+key=1 \xfe");
        assert_eq!(&*out, b"\xff bytes <redacted> \xfe");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn proxy_credentials_are_redacted_as_the_password_the_pair_and_basic() {
        let mut r = Redactor::new();
        r.add_credentials("alice", "pr0xy%40pass");
        let basic = base64::engine::general_purpose::STANDARD.encode("alice:pr0xy@pass");
        let text = format!("Proxy-Authorization: Basic {basic}; user alice:pr0xy@pass; url pr0xy%40pass");
        assert_eq!(r.redact(&text), "Proxy-Authorization: Basic <redacted>; user <redacted>; url <redacted>");
        assert!(!format!("{r:?}").contains("pr0xy"));
    }

    /// Pins the cut: a server's error text is cut to a length before it is redacted, and a cut
    /// inside an echoed key used to leave all of the key but its last characters
    /// (`auth=Bearer sk-proj-AbCdEfGh1234567890X…`).
    #[test]
    fn a_secret_cut_short_by_a_length_limit_is_still_redacted() {
        let mut r = Redactor::new();
        r.add("sk-proj-AbCdEfGh1234567890XyZ");
        let text = crate::text::one_line("401 auth=Bearer sk-proj-AbCdEfGh1234567890XyZ", 36);
        assert_eq!(text, "401 auth=Bearer sk-proj-AbCdEfGh1234…");
        assert_eq!(r.redact(&text), "401 auth=Bearer <redacted>…");
        for cut in 16..45 {
            let text = crate::text::one_line("401 auth=Bearer sk-proj-AbCdEfGh1234567890XyZ; more", cut);
            let out = r.redact(&text);
            assert!(!out.contains("sk-p"), "cut at {cut}: {out}");
        }
        // Two characters are not a secret; text without a cut mark is left alone.
        assert_eq!(r.redact("so sk…"), "so sk…");
        assert_eq!(r.redact("sk-proj is the prefix"), "sk-proj is the prefix");
    }

    /// Pins base64 at every alignment: the base64 of `Bearer KEY`, or of several values run
    /// together, encodes the key at an offset that the key's own base64 does not match.
    #[test]
    fn a_secret_inside_a_longer_base64_value_is_redacted_at_any_alignment() {
        let mut r = Redactor::new();
        r.add("hunter2secret");
        for prefix in ["", "a", "ab", "abc", "x-api-key: "] {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{prefix}hunter2secret tail"));
            let out = r.redact(&encoded);
            assert!(out.contains(REDACTED), "{prefix:?}: {encoded} -> {out}");
        }
    }

    #[test]
    fn values_too_short_to_redact_are_ignored_and_longer_secrets_win() {
        let mut r = Redactor::new();
        r.add("abc").add("token-1").add("token-1-long");
        assert_eq!(r.redact("abc token-1-long token-1"), "abc <redacted> <redacted>");
    }
}
