//! A URL given to `--server-metrics-url` or `--gpu-metrics-url`: `http(s)://host[:port][/path]`
//! (path `/metrics` when none), checked when the flag is parsed (SB150).

use servebench_core::BenchError;

/// A validated metrics URL, split into the origin a client connects to and the path it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsUrl {
    /// `http://host:port`.
    pub origin: String,
    /// `/metrics`, with the query when given.
    pub path: String,
}

impl MetricsUrl {
    /// Parses `text` given to `flag`; user info (`user:pass@`) is refused so that no
    /// credential lands in the result, which names every URL.
    pub fn parse(flag: &str, text: &str) -> Result<MetricsUrl, BenchError> {
        let bad = |problem: &str| BenchError::MetricsUrlInvalid {
            flag: flag.to_owned(),
            url: if text.contains('@') {
                "<a URL with user info>".to_owned()
            } else {
                servebench_core::secret::redact_url(text)
            },
            problem: problem.to_owned(),
        };
        let t = text.trim();
        let rest = t
            .strip_prefix("http://")
            .or_else(|| t.strip_prefix("https://"))
            .ok_or_else(|| bad("it is not an http:// or https:// URL"))?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(bad("it has no host"));
        }
        if authority.contains('@') {
            return Err(bad("it has user info, which would be written into the result"));
        }
        if authority.chars().any(|c| c.is_whitespace()) || path.chars().any(|c| c.is_whitespace()) {
            return Err(bad("it contains white space"));
        }
        if let Some(problem) = authority_problem(authority) {
            return Err(bad(problem));
        }
        let scheme_len = t.len() - rest.len();
        let path = match path {
            "" | "/" => "/metrics".to_owned(),
            p if p.starts_with('?') => format!("/metrics{p}"),
            p => p.to_owned(),
        };
        Ok(MetricsUrl { origin: format!("{}{authority}", &t[..scheme_len]), path })
    }

    /// The whole URL as messages and files name it: a secret-named query value (`?token=…`)
    /// redacted ([`servebench_core::secret::redact_url`]; it was written into the result and
    /// every line of the series file). Requests use `origin` and `path`.
    pub fn url(&self) -> String {
        servebench_core::secret::redact_url(&format!("{}{}", self.origin, self.path))
    }
}

/// What is wrong with a URL's `host[:port]` (a bracketed IPv6 host allowed), if anything: the
/// port must be a number from 1 to 65535 (a bad one was found only when the first poll failed,
/// in a warning that named `--base-url`).
fn authority_problem(authority: &str) -> Option<&'static str> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, after)) => match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return Some("it has text after its IPv6 host"),
            },
            None => return Some("its IPv6 host has no closing ']'"),
        },
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return Some("it has no host");
    }
    match port {
        None => None,
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok_and(|n| n > 0) => None,
        Some(_) => Some("its port is not a number from 1 to 65535"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins a secret query value of a metrics URL kept off every message and file (the result's
    /// `server_metrics.endpoints[].url`, `gpu_telemetry.urls`, the series file's lines), while the
    /// request still carries it.
    #[test]
    fn a_secret_query_value_is_named_redacted_and_still_sent() {
        let u =
            MetricsUrl::parse("--server-metrics-url", "http://127.0.0.1:9400/metrics?token=SECRET9").unwrap();
        assert_eq!(u.path, "/metrics?token=SECRET9", "sent as given");
        assert_eq!(u.url(), "http://127.0.0.1:9400/metrics?token=<redacted>");
        let e = MetricsUrl::parse("--gpu-metrics-url", "gopher://h/x?token=SECRET9").unwrap_err().to_string();
        assert!(!e.contains("SECRET9"), "{e}");
    }

    #[test]
    fn metrics_urls_split_default_to_metrics_and_refuse_user_info() {
        let u = MetricsUrl::parse("--server-metrics-url", "http://127.0.0.1:9400").unwrap();
        assert_eq!((u.origin.as_str(), u.path.as_str()), ("http://127.0.0.1:9400", "/metrics"));
        let u = MetricsUrl::parse("--gpu-metrics-url", "https://h:1/dcgm/metrics?x=1").unwrap();
        assert_eq!(u.url(), "https://h:1/dcgm/metrics?x=1");
        for bad in [
            "ftp://h/metrics",
            "127.0.0.1:8000",
            "http://",
            "http://u:secret@h/metrics",
            "http://h/a b",
            "http://:9/",
        ] {
            let e = MetricsUrl::parse("--server-metrics-url", bad).unwrap_err();
            assert_eq!(e.code(), servebench_core::ErrorCode::MetricsUrlInvalid, "{bad}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    /// Pins a metrics URL with a bad port: refused when parsed, naming the flag given (a poll
    /// warning named `--base-url` before).
    #[test]
    fn a_metrics_url_with_a_bad_port_is_refused_naming_its_flag() {
        for bad in [
            "http://h:999999/metrics",
            "http://h:0",
            "http://h:x1",
            "http://[::1",
            "http://[::1]x",
            "http://h:",
        ] {
            let e = MetricsUrl::parse("--server-metrics-url", bad).unwrap_err().to_string();
            assert!(e.contains("--server-metrics-url"), "{bad}: {e}");
            assert!(!e.contains("--base-url"), "{bad}: {e}");
        }
        for good in ["http://h:65535", "http://[::1]:9400/m", "http://[::1]", "https://h"] {
            assert!(MetricsUrl::parse("--server-metrics-url", good).is_ok(), "{good}");
        }
    }
}
