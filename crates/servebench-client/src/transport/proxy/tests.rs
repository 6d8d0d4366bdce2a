//! Pure tests of the proxy rules: the environment is passed in, never read.

use super::*;

fn env(pairs: &[(&str, &str)]) -> ProxyEnv {
    let map: std::collections::HashMap<String, String> =
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    ProxyEnv::from_lookup(|k| map.get(k).cloned())
}

fn route_for(pairs: &[(&str, &str)], target: &str) -> Result<Option<ProxyRoute>> {
    route(&ProxyOptions { env: env(pairs), disabled: false }, &Url::parse(target).unwrap())
}

#[test]
fn https_targets_tunnel_and_http_targets_forward() {
    let pairs = [("HTTPS_PROXY", "http://proxy.corp:3128"), ("http_proxy", "http://fwd.corp:8080")];
    let r = route_for(&pairs, "https://api.example.com/v1").unwrap().unwrap();
    assert!(r.tunnel);
    assert_eq!((r.host.as_str(), r.port, r.source), ("proxy.corp", 3128, "HTTPS_PROXY"));
    let r = route_for(&pairs, "http://api.example.com").unwrap().unwrap();
    assert!(!r.tunnel);
    assert_eq!((r.host.as_str(), r.port), ("fwd.corp", 8080));
    // HTTP_PROXY never applies to https targets; ALL_PROXY applies to both.
    assert!(route_for(&[("HTTP_PROXY", "http://p:1")], "https://x").unwrap().is_none());
    let r = route_for(&[("ALL_PROXY", "p:1")], "https://x").unwrap().unwrap();
    assert_eq!((r.host.as_str(), r.port, r.source), ("p", 1, "ALL_PROXY"));
}

#[test]
fn lowercase_wins_over_uppercase_as_in_python() {
    let r =
        route_for(&[("https_proxy", "http://low:1"), ("HTTPS_PROXY", "http://up:2")], "https://x").unwrap();
    assert_eq!(r.unwrap().host, "low");
    // Python's urllib: an empty lowercase variable removes the uppercase one.
    let r = route_for(&[("https_proxy", " "), ("HTTPS_PROXY", "http://up:2")], "https://x").unwrap();
    assert!(r.is_none());
    let r = route_for(&[("HTTPS_PROXY", "http://up:2")], "https://x").unwrap();
    assert_eq!(r.unwrap().host, "up");
}

/// Pins the variable named in the run header: `http_proxy` (lowercase) used to be shown as
/// `HTTP_PROXY`. The header names the variable actually read.
#[test]
fn the_route_names_the_variable_actually_read() {
    let r = route_for(&[("http_proxy", "http://low:1")], "http://x").unwrap().unwrap();
    assert_eq!(r.source, "http_proxy");
    let r = route_for(&[("HTTP_PROXY", "http://up:1")], "http://x").unwrap().unwrap();
    assert_eq!(r.source, "HTTP_PROXY");
    let r = route_for(&[("https_proxy", "http://low:1")], "https://x").unwrap().unwrap();
    assert_eq!(r.source, "https_proxy");
    let r = route_for(&[("all_proxy", "http://low:1")], "https://x").unwrap().unwrap();
    assert_eq!(r.source, "all_proxy");
}

#[test]
fn no_proxy_matches_hosts_suffixes_cidrs_and_star() {
    let base = ("HTTPS_PROXY", "http://p:3128");
    let direct = |no: &str, target: &str| route_for(&[base, ("NO_PROXY", no)], target).unwrap().is_none();
    assert!(direct("localhost", "https://localhost:8000"));
    assert!(direct("example.com", "https://api.example.com"));
    assert!(direct(".example.com", "https://api.example.com"));
    assert!(!direct("example.com", "https://notexample.com"));
    assert!(direct("10.0.0.0/8, 192.168.1.1", "https://10.2.3.4:8000"));
    assert!(direct("10.0.0.0/8,192.168.1.1", "https://192.168.1.1"));
    assert!(!direct("10.0.0.0/8", "https://11.0.0.1"));
    assert!(direct("::1", "https://[::1]:8000"));
    assert!(direct("*", "https://anything.example"));
    assert!(direct("other, *", "https://10.1.2.3:8000"));
    assert!(!direct("", "https://anything.example"));
    let off = ProxyOptions { env: env(&[base]), disabled: true };
    assert!(route(&off, &Url::parse("https://x").unwrap()).unwrap().is_none(), "--no-proxy");
}

#[test]
fn credentials_become_basic_auth_and_are_never_shown() {
    let r = route_for(&[("HTTPS_PROXY", "http://alice:s%40cret@p:3128")], "https://x").unwrap().unwrap();
    let auth = r.auth.clone().unwrap();
    assert!(auth.is_sensitive());
    // base64("alice:s@cret")
    assert_eq!(auth.to_str().unwrap(), "Basic YWxpY2U6c0BjcmV0");
    assert_eq!(r.display, "http://***@p:3128");
    let dbg = format!("{r:?} {:?}", env(&[("HTTPS_PROXY", "http://alice:s%40cret@p:3128")]));
    assert!(!dbg.contains("cret") && !dbg.contains("YWxp"), "{dbg}");
}

#[test]
fn unsupported_or_unusable_proxies_are_sb312() {
    let e = route_for(&[("ALL_PROXY", "socks5://u:pw@p:1080")], "https://x").unwrap_err();
    assert_eq!(e.code().as_str(), "SB312");
    let s = e.to_string();
    assert!(s.contains("socks5://") && s.contains("***@p:1080") && !s.contains("pw"), "{s}");
    let e = route_for(&[("HTTPS_PROXY", "https://p:443")], "https://x").unwrap_err();
    assert_eq!(e.code().as_str(), "SB312");
    // A host in NO_PROXY never needs the proxy, usable or not.
    let r = route_for(&[("ALL_PROXY", "socks5://p:1080"), ("NO_PROXY", "x")], "https://x").unwrap();
    assert!(r.is_none());
}

#[test]
fn redaction_hides_userinfo() {
    assert_eq!(redact("http://u:p@h:1"), "http://***@h:1");
    assert_eq!(redact("h:3128"), "http://h:3128");
    assert_eq!(redact("http://h"), "http://h");
}

/// Pins the proxy URL with an out-of-range port: it was read as no port and the run
/// connected to port 80 of the proxy host; now it is refused naming the variable.
#[test]
fn a_proxy_url_with_an_out_of_range_port_is_refused_not_sent_to_port_80() {
    for raw in ["http://proxy.corp:99999", "proxy.corp:70000", "http://user:pw@proxy.corp:99999"] {
        let e = route_for(&[("http_proxy", raw)], "http://api.example.com").expect_err(raw);
        let text = e.to_string();
        assert!(text.contains("http_proxy is not a valid proxy URL"), "{text}");
        assert!(!text.contains("pw"), "no credentials in {text}");
    }
    let r = route_for(&[("http_proxy", "proxy.corp:3128")], "http://x").unwrap().unwrap();
    assert_eq!((r.host.as_str(), r.port), ("proxy.corp", 3128));
    let r = route_for(&[("http_proxy", "http://proxy.corp")], "http://x").unwrap().unwrap();
    assert_eq!(r.port, 80);
}
