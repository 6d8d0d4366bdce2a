//! Joining the base URL's path prefix and an endpoint, by path segment.
//!
//! vLLM joins `--base-url` and `--endpoint` as strings (`http://gw/v1` + `/v1/completions` →
//! `/v1/v1/completions`). servebench joins by segment:
//!
//! - the endpoint is appended to the prefix, except that prefix segments the endpoint starts
//!   with are not repeated (the longest run of trailing prefix segments equal to leading
//!   endpoint segments is merged): `/team-a/v1` + `/v1/models` → `/team-a/v1/models`,
//!   `/api` + `/api/v1/x` → `/api/v1/x`, `/v1` + `/completions` → `/v1/completions`;
//! - segments compare whole: a prefix `/v` or `/tok` is never mistaken for `/v1` or
//!   `/tokenize` (`/v` + `/v1/models` → `/v/v1/models`);
//! - control-plane calls to server-root endpoints (`/tokenize`, `/metrics`, `/start_profile`, …
//!   — everything not under `/v1/`) go to the *server root*: the prefix without a trailing
//!   `/v1` segment, plus the endpoint (appended, never merged), so a base URL written
//!   OpenAI-SDK style (`http://gw/team-a/v1`) reaches `/team-a/tokenize`;
//! - empty segments (`//`, a trailing `/`) are dropped; a query string is kept as given, and
//!   the base URL's own query is added after it ([`with_query`]).

/// The non-empty segments of a path.
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// The normalised prefix of a base URL's path: `/a/b` (no trailing slash), or `""`.
pub fn normalize_prefix(path: &str) -> String {
    segments(path).fold(String::new(), |mut acc, s| {
        acc.push('/');
        acc.push_str(s);
        acc
    })
}

/// `prefix` without a trailing `/v1` segment: the server root under a base URL written with
/// the OpenAI API version (`/team-a/v1` → `/team-a`).
pub fn server_root(prefix: &str) -> String {
    let p = normalize_prefix(prefix);
    match p.strip_suffix("/v1") {
        Some(root) => root.to_owned(),
        None => p,
    }
}

/// Whether `endpoint` lives at the server root rather than under the OpenAI API (`/v1/...`).
pub fn is_root_endpoint(endpoint: &str) -> bool {
    let path = endpoint.split('?').next().unwrap_or("");
    segments(path).next() != Some("v1")
}

/// Joins `prefix` and `endpoint` by segment (see the module documentation). `endpoint` may
/// carry a query string; the result always starts with `/`.
pub fn join(prefix: &str, endpoint: &str) -> String {
    let (path, query) = match endpoint.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (endpoint, None),
    };
    let pre: Vec<&str> = segments(prefix).collect();
    let ep: Vec<&str> = segments(path).collect();
    let overlap = (0..=pre.len().min(ep.len())).rev().find(|&k| pre[pre.len() - k..] == ep[..k]).unwrap_or(0);
    let mut out = String::new();
    for s in pre.iter().chain(&ep[overlap..]) {
        out.push('/');
        out.push_str(s);
    }
    if out.is_empty() {
        out.push('/');
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `path` with the base URL's `query` added: after the endpoint's own query (`&`), or as the
/// query (`?`); `path` as it is without one. A parameter the endpoint already names is not
/// repeated (the endpoint's value wins).
pub fn with_query(path: String, query: Option<&str>) -> String {
    let Some(query) = query.map(|q| q.trim_start_matches('?')).filter(|q| !q.is_empty()) else { return path };
    let named = |p: &str| p.split_once('=').map_or(p, |(n, _)| n).to_owned();
    let own: Vec<String> =
        path.split_once('?').map(|(_, q)| q.split('&').map(named).collect()).unwrap_or_default();
    let added: Vec<&str> = query.split('&').filter(|p| !p.is_empty() && !own.contains(&named(p))).collect();
    if added.is_empty() {
        return path;
    }
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}{}", added.join("&"))
}

/// The request path of a control-plane `endpoint`: server-root endpoints are joined to the
/// server root, `/v1/...` endpoints to the whole prefix.
pub fn join_control(prefix: &str, endpoint: &str) -> String {
    if is_root_endpoint(endpoint) {
        // No merging here: a server-root endpoint is one fixed segment, appended as is.
        format!("{}{}", server_root(prefix), join("", endpoint))
    } else {
        join(prefix, endpoint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_base_query_follows_the_endpoints_own_and_never_repeats_a_name() {
        assert_eq!(with_query("/v1/c".into(), Some("api-version=1")), "/v1/c?api-version=1");
        assert_eq!(with_query("/v1/c?a=1".into(), Some("b=2&a=3")), "/v1/c?a=1&b=2");
        assert_eq!(with_query("/v1/c?a=1".into(), Some("a=3")), "/v1/c?a=1");
        assert_eq!(with_query("/v1/c".into(), None), "/v1/c");
        assert_eq!(with_query("/v1/c".into(), Some("")), "/v1/c");
        assert_eq!(with_query("/v1/c".into(), Some("flag&x=1")), "/v1/c?flag&x=1");
    }

    #[test]
    fn the_documented_cases() {
        let cases = [
            ("", "/v1/models", "/v1/models"),
            ("/", "/v1/models", "/v1/models"),
            ("/v", "/v1/models", "/v/v1/models"),
            ("/tok", "/tokenize", "/tok/tokenize"),
            ("/tok/", "/tokenize", "/tok/tokenize"),
            ("/team-a/v1", "/v1/models", "/team-a/v1/models"),
            ("/team-a/v1/", "/v1/chat/completions", "/team-a/v1/chat/completions"),
            ("/v1", "/v1/completions", "/v1/completions"),
            ("/v1", "/completions", "/v1/completions"),
            ("/api", "/api/v1/models", "/api/v1/models"),
            ("/api", "/v1/a?b=1", "/api/v1/a?b=1"),
            ("/team-a/v1", "/team-a/v1/completions", "/team-a/v1/completions"),
            ("/a//b", "//c", "/a/b/c"),
            ("", "generate", "/generate"),
        ];
        for (prefix, endpoint, want) in cases {
            assert_eq!(join(prefix, endpoint), want, "{prefix:?} + {endpoint:?}");
        }
    }

    #[test]
    fn control_endpoints_go_to_the_server_root() {
        assert_eq!(join_control("/team-a/v1", "/tokenize"), "/team-a/tokenize");
        assert_eq!(join_control("/team-a/v1", "/v1/models"), "/team-a/v1/models");
        assert_eq!(join_control("/v1", "/metrics"), "/metrics");
        assert_eq!(join_control("/v1/", "/tokenize"), "/tokenize");
        assert_eq!(join_control("/v", "/tokenize"), "/v/tokenize");
        assert_eq!(join_control("/v1x", "/tokenize"), "/v1x/tokenize");
        assert_eq!(join_control("/team-a", "/reset_prefix_cache"), "/team-a/reset_prefix_cache");
        assert_eq!(join_control("/team-a/v1", "/v1/tokenize"), "/team-a/v1/tokenize");
        assert!(is_root_endpoint("/tokenize") && is_root_endpoint("/v10/x") && !is_root_endpoint("/v1"));
    }

    /// A path segment: lowercase letters, digits, `-`, `_`, `.`; includes the confusable
    /// `v`, `v1`, `tok`, `tokenize`.
    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("v".to_owned()),
            Just("v1".to_owned()),
            Just("tok".to_owned()),
            Just("tokenize".to_owned()),
            "[a-z0-9_.-]{1,6}",
        ]
    }

    /// A gateway's own prefix segment (anything but the API version `v1`).
    fn gateway_segment() -> impl Strategy<Value = String> {
        segment().prop_filter("not the API version", |s| s != "v1")
    }

    fn path(max: usize) -> impl Strategy<Value = (Vec<String>, bool)> {
        (prop::collection::vec(segment(), 0..max), any::<bool>())
    }

    fn render((segs, trailing): &(Vec<String>, bool)) -> String {
        let mut s: String = segs.iter().map(|x| format!("/{x}")).collect();
        if *trailing {
            s.push('/');
        }
        s
    }

    proptest! {
        /// The result is the prefix's segments followed by a suffix of the endpoint's: the
        /// prefix is never cut or altered, the endpoint's tail is always requested, and nothing
        /// is doubled where the endpoint repeats the prefix's end.
        #[test]
        fn join_keeps_the_prefix_and_the_endpoint_tail(pre in path(4), ep in path(4)) {
            let (p, e) = (render(&pre), render(&ep));
            let out = join(&p, &e);
            let out_segs: Vec<&str> = segments(&out).collect();
            prop_assert!(out.starts_with('/') && !out.contains("//"));
            prop_assert!(out_segs.starts_with(&pre.0.iter().map(String::as_str).collect::<Vec<_>>()));
            let k = pre.0.len() + ep.0.len() - out_segs.len();
            // Exactly the first `k` endpoint segments were merged, and they equal the prefix's end.
            prop_assert!(k <= ep.0.len() && k <= pre.0.len());
            prop_assert_eq!(&out_segs[pre.0.len()..], &ep.0[k..].iter().map(String::as_str).collect::<Vec<_>>()[..]);
            prop_assert_eq!(&pre.0[pre.0.len() - k..], &ep.0[..k]);
            // A trailing slash on the prefix changes nothing.
            prop_assert_eq!(join(&format!("{p}/"), &e), out.clone());
            // Joining is idempotent: the joined path, as an endpoint, maps to itself.
            prop_assert_eq!(join(&p, &out), out);
        }

        /// Under an empty prefix an endpoint is requested as given.
        #[test]
        fn empty_prefix_is_identity(ep in path(4)) {
            let e = render(&ep);
            let out = join("", &e);
            prop_assert_eq!(out, if ep.0.is_empty() { "/".to_owned() } else { normalize_prefix(&e) });
        }

        /// A gateway prefix of any segments, with or without `/v1`, reaches every endpoint
        /// under the prefix, and root endpoints under the server root.
        #[test]
        fn gateway_prefixes_reach_every_endpoint(
            pre in prop::collection::vec(gateway_segment(), 0..3),
            trailing in any::<bool>(),
            with_v1 in any::<bool>(),
        ) {
            let pre = (pre, trailing);
            let mut base = render(&pre);
            let root = normalize_prefix(&base);
            if with_v1 {
                base = format!("{}/v1", base.trim_end_matches('/'));
            }
            for ep in ["/v1/models", "/v1/completions", "/v1/chat/completions"] {
                prop_assert_eq!(join_control(&base, ep), format!("{root}{ep}"));
                prop_assert_eq!(join(&base, ep), format!("{root}{ep}"));
            }
            for ep in ["/tokenize", "/detokenize", "/metrics", "/start_profile", "/reset_prefix_cache"] {
                prop_assert_eq!(join_control(&base, ep), format!("{root}{ep}"));
            }
        }
    }
}
