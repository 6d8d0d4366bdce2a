//! Flag values: the pure parsers and validators that turn the text of a flag (`--header`,
//! `--metadata`, `--random-range-ratio`, percentiles, `--goodput`, `--extra-body`, the rate)
//! into a typed value, with a coded error naming the fix. Everything here is checked before
//! any network traffic.

use crate::error::{BenchError, Result};
use crate::metrics::{MetricName, Slo};
use crate::secret::Secret;
use serde_json::{Map, Value};

/// A user header. Sensitive values are held as [`Secret`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: Secret,
}

/// Parses `KEY=VALUE` (also `KEY:VALUE`) for `--header`. The name ends at the first `=` or
/// `:` (neither can be part of a header name), so `Cookie: a=b` names `Cookie`.
pub fn parse_header(item: &str) -> Result<Header> {
    let split = item.find(['=', ':']);
    let Some(pos) = split else {
        return Err(BenchError::config(
            "--header",
            format!("expected KEY=VALUE, got '{}'", redact_header_item(item)),
            "write each header as --header Name=value",
        ));
    };
    let name = item[..pos].trim();
    let value = item[pos + 1..].trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Err(BenchError::config(
            "--header",
            format!("'{}' is not a valid header name", name),
            "use letters, digits, '-' and '_' in header names",
        ));
    }
    if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding") {
        return Err(BenchError::config(
            "--header",
            format!("{name} frames the request body, which the client does itself"),
            format!("remove --header {name}"),
        ));
    }
    Ok(Header { name: name.to_string(), value: Secret::new(value) })
}

fn redact_header_item(item: &str) -> String {
    if item.len() > 12 {
        format!("{}…", &item.chars().take(8).collect::<String>())
    } else {
        item.to_string()
    }
}

/// Parses `KEY=VALUE` for `--metadata`.
pub fn parse_metadata(item: &str) -> Result<(String, String)> {
    match item.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(BenchError::config(
            "--metadata",
            format!("expected KEY=VALUE, got '{item}'"),
            "write each item as --metadata key=value",
        )),
    }
}

/// `--random-range-ratio`: one ratio for both lengths, or separate ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeRatio {
    pub input: f64,
    pub output: f64,
}

/// Parses `--random-range-ratio`: a number in [0, 1) or JSON `{"input": r, "output": r}`.
pub fn parse_range_ratio(text: &str) -> Result<RangeRatio> {
    let flag = "--random-range-ratio";
    let fix = "pass a number in [0, 1) such as 0.5, or JSON like '{\"input\": 0.2, \"output\": 0.5}'";
    let t = text.trim();
    let ratio = if t.starts_with('{') {
        let v: Value = serde_json::from_str(t)
            .map_err(|e| BenchError::config(flag, format!("'{t}' is not valid JSON ({e})"), fix))?;
        let obj = v
            .as_object()
            .ok_or_else(|| BenchError::config(flag, "JSON must be an object".to_string(), fix))?;
        for k in obj.keys() {
            if k != "input" && k != "output" {
                return Err(BenchError::config(flag, format!("unknown key '{k}'"), fix));
            }
        }
        let get = |k: &str| -> Result<f64> {
            match obj.get(k) {
                None => Ok(0.0),
                Some(v) => {
                    v.as_f64().ok_or_else(|| BenchError::config(flag, format!("'{k}' must be a number"), fix))
                }
            }
        };
        RangeRatio { input: get("input")?, output: get("output")? }
    } else {
        let r: f64 =
            t.parse().map_err(|_| BenchError::config(flag, format!("'{t}' is not a number"), fix))?;
        RangeRatio { input: r, output: r }
    };
    for (name, r) in [("input", ratio.input), ("output", ratio.output)] {
        if !(0.0..1.0).contains(&r) || !r.is_finite() {
            let extra = if r == 1.0 {
                " (the old meaning '1.0 = fixed length' is gone: use 0.0 for fixed lengths)"
            } else {
                ""
            };
            return Err(BenchError::config(flag, format!("{name} ratio {r} is outside [0, 1){extra}"), fix));
        }
    }
    Ok(ratio)
}

/// Parses `--percentile-metrics ttft,tpot,itl`.
pub fn parse_percentile_metrics(text: &str) -> Result<Vec<MetricName>> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let m = MetricName::parse(&part.trim().to_ascii_lowercase()).ok_or_else(|| {
            BenchError::config(
                "--percentile-metrics",
                format!("unknown metric '{}'", part.trim()),
                "use a comma-separated subset of ttft,tpot,itl,e2el (also client_queue_time, e2el_including_client_queue)",
            )
        })?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(BenchError::config(
            "--percentile-metrics",
            "no metric given",
            "use a comma-separated subset of ttft,tpot,itl,e2el",
        ));
    }
    Ok(out)
}

/// Parses `--metric-percentiles 50,90,99` (each in [0, 100]).
pub fn parse_metric_percentiles(text: &str) -> Result<Vec<f64>> {
    let mut out: Vec<f64> = Vec::new();
    for part in text.split(',').filter(|p| !p.trim().is_empty()) {
        let p: f64 = part.trim().parse().map_err(|_| {
            BenchError::config(
                "--metric-percentiles",
                format!("'{}' is not a number", part.trim()),
                "use comma-separated numbers in [0, 100], e.g. 50,90,99",
            )
        })?;
        if !(0.0..=100.0).contains(&p) {
            return Err(BenchError::config(
                "--metric-percentiles",
                format!("{p} is outside [0, 100]"),
                "use comma-separated numbers in [0, 100], e.g. 50,90,99",
            ));
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err(BenchError::config("--metric-percentiles", "no percentile given", "e.g. 99"));
    }
    Ok(out)
}

/// Parses `--goodput ttft:MS tpot:MS e2el:MS`.
pub fn parse_goodput(items: &[String]) -> Result<Vec<Slo>> {
    let fix = "write SLOs as KEY:MS with KEY one of ttft, tpot, e2el, e.g. --goodput ttft:500 tpot:50";
    let mut out: Vec<Slo> = Vec::new();
    for item in items.iter().flat_map(|s| s.split_whitespace()) {
        let (k, v) = item
            .split_once(':')
            .ok_or_else(|| BenchError::config("--goodput", format!("'{item}' is not KEY:MS"), fix))?;
        let metric = match MetricName::parse(&k.trim().to_ascii_lowercase()) {
            Some(m @ (MetricName::Ttft | MetricName::Tpot | MetricName::E2el)) => m,
            _ => return Err(BenchError::config("--goodput", format!("unknown SLO key '{k}'"), fix)),
        };
        let threshold_ms: f64 = v
            .trim()
            .parse()
            .map_err(|_| BenchError::config("--goodput", format!("'{v}' is not a number of ms"), fix))?;
        if threshold_ms.is_infinite() && threshold_ms > 0.0 {
            let problem = format!("{k} threshold {v}: an unbounded SLO bounds nothing");
            return Err(BenchError::config("--goodput", problem, format!("leave {k} out of --goodput")));
        }
        if !threshold_ms.is_finite() || threshold_ms < 0.0 {
            let problem = format!("{k} threshold {v} is not a finite number of ms >= 0");
            return Err(BenchError::config("--goodput", problem, fix));
        }
        out.retain(|s| s.metric != metric);
        out.push(Slo { metric, threshold_ms });
    }
    if out.is_empty() {
        return Err(BenchError::config("--goodput", "no SLO given", fix));
    }
    Ok(out)
}

/// Parses `--extra-body` (a JSON object).
pub fn parse_extra_body(text: &str) -> Result<Map<String, Value>> {
    let fix = "pass a JSON object, e.g. --extra-body '{\"min_tokens\": 10}'";
    let v: Value = serde_json::from_str(text)
        .map_err(|e| BenchError::config("--extra-body", format!("not valid JSON ({e})"), fix))?;
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(BenchError::config("--extra-body", "JSON must be an object", fix)),
    }
}

/// Parses `--request-rate` (a positive number or `inf`).
pub fn parse_request_rate(text: &str) -> Result<f64> {
    let fix = "pass a positive number of requests per second, or inf to send all at once";
    let t = text.trim().to_ascii_lowercase();
    let r: f64 = if t == "inf" || t == "infinity" {
        f64::INFINITY
    } else {
        t.parse()
            .map_err(|_| BenchError::config("--request-rate", format!("'{text}' is not a number"), fix))?
    };
    if r.is_nan() || r <= 0.0 {
        return Err(BenchError::config("--request-rate", format!("must be > 0 or inf (got {text})"), fix));
    }
    if r < MIN_REQUEST_RATE {
        // The schedule's gaps would be days to ages: the run would wait without a word.
        return Err(BenchError::config(
            "--request-rate",
            format!("{text} is below one request per day (a mean gap of {:.3e} s between requests)", 1.0 / r),
            fix,
        ));
    }
    Ok(r)
}

/// The lowest `--request-rate`: one request per day.
pub const MIN_REQUEST_RATE: f64 = 1.0 / 86_400.0;

/// The longest time a flag of seconds may give (`--request-timeout`, `--stall-timeout`,
/// `--duration`, a stage, `--scrape-interval`, `--ready-check-timeout-sec`, `merge
/// --wait-secs`): 10^9 s, about 31.7 years. Every such time is added to a clock reading, and
/// far longer ones (up to 2^64 s) overflowed it.
pub const MAX_FLAG_SECONDS: f64 = 1e9;

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(e: BenchError) -> &'static str {
        e.code().as_str()
    }

    #[test]
    fn a_rate_below_one_request_per_day_is_refused_not_waited_for() {
        let e = parse_request_rate("1e-300").unwrap_err();
        assert_eq!(code_of(e), "SB101");
        assert!(parse_request_rate("1e-300").unwrap_err().to_string().contains("below one request per day"));
        assert_eq!(parse_request_rate("0.001").unwrap(), 0.001);
    }

    #[test]
    fn range_ratio_forms() {
        assert_eq!(parse_range_ratio("0.5").unwrap(), RangeRatio { input: 0.5, output: 0.5 });
        assert_eq!(
            parse_range_ratio(r#"{"input": 0.2, "output": 0.9}"#).unwrap(),
            RangeRatio { input: 0.2, output: 0.9 }
        );
        assert_eq!(parse_range_ratio(r#"{"output": 0.3}"#).unwrap(), RangeRatio { input: 0.0, output: 0.3 });
        for bad in ["1.0", "-0.1", "abc", "{bad json", r#"{"inp": 0.1}"#, "[0.1]", "NaN"] {
            assert_eq!(code_of(parse_range_ratio(bad).unwrap_err()), "SB101", "{bad}");
        }
        assert!(parse_range_ratio("1.0").unwrap_err().to_string().contains("0.0 for fixed"));
    }

    #[test]
    fn request_rate_forms() {
        assert_eq!(parse_request_rate("inf").unwrap(), f64::INFINITY);
        assert_eq!(parse_request_rate("2.5").unwrap(), 2.5);
        for bad in ["0", "-1", "x", "nan"] {
            let e = parse_request_rate(bad).unwrap_err();
            assert!(e.to_string().contains("--request-rate"));
        }
    }

    #[test]
    fn goodput_parsing() {
        let s = parse_goodput(&["ttft:500".into(), "tpot:50 e2el:2000".into()]).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], Slo { metric: MetricName::Ttft, threshold_ms: 500.0 });
        for bad in ["ttft", "itl:5", "foo:1", "ttft:-1", "ttft:x", "", "  ", "ttft:inf", "ttft:nan"] {
            assert!(parse_goodput(&[bad.to_string()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn headers_and_secrets() {
        let h = parse_header("Authorization=Bearer sk-123").unwrap();
        assert_eq!(h.name, "Authorization");
        assert_eq!(h.value.expose(), "Bearer sk-123");
        assert!(!format!("{h:?}").contains("sk-123"));
        let cookie = parse_header("Cookie: session=abc=1").unwrap();
        assert_eq!((cookie.name.as_str(), cookie.value.expose()), ("Cookie", "session=abc=1"));
        let eq = parse_header("X-Time=12:30").unwrap();
        assert_eq!((eq.name.as_str(), eq.value.expose()), ("X-Time", "12:30"));
        let e = parse_header("novalue-but-a-long-secret-sk-999").unwrap_err();
        assert!(!e.to_string().contains("sk-999"));
        // The body's framing is the client's: refused with the fix, not dropped silently.
        for framing in ["Content-Length=12", "transfer-encoding: chunked"] {
            let e = parse_header(framing).unwrap_err();
            assert_eq!(e.code().as_str(), "SB101", "{e}");
            assert!(e.to_string().contains("fix: remove --header"), "{e}");
        }
        assert_eq!(parse_header("Host=api.internal").unwrap().value.expose(), "api.internal");
    }

    #[test]
    fn percentiles_and_metrics() {
        assert_eq!(parse_metric_percentiles("50,90,99.9").unwrap(), vec![50.0, 90.0, 99.9]);
        assert!(parse_metric_percentiles("101").is_err());
        assert_eq!(parse_percentile_metrics("ttft, itl").unwrap(), vec![MetricName::Ttft, MetricName::Itl]);
        assert!(parse_percentile_metrics("ttfb").is_err());
        assert!(parse_extra_body("[1]").is_err());
        assert_eq!(parse_extra_body(r#"{"a":1}"#).unwrap().len(), 1);
        assert_eq!(parse_metadata("a=b=c").unwrap(), ("a".into(), "b=c".into()));
    }
}
