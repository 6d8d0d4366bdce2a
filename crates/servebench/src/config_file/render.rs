//! The effective config of a parsed command line as a TOML config file (`config show`): every
//! flag set by the command line or a file, secrets redacted, with where each value came from.

use super::flags::{is_repeatable, is_switch, NOT_IN_A_FILE as SKIP};
use clap::parser::ValueSource;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The set flags of `m` (parsed by `cmd`) as `key = value` TOML lines, secrets redacted.
/// `origins` gives the file a value came from (else: the command line).
pub fn effective_toml(
    cmd: &clap::Command,
    m: &clap::ArgMatches,
    origins: &BTreeMap<String, String>,
) -> String {
    let mut out = String::new();
    for (key, value) in effective_values(cmd, m) {
        let from = origins.get(&key).map_or("command line", String::as_str);
        let _ = writeln!(out, "{key} = {value}  # {from}");
    }
    out
}

/// `(long name, TOML value)` of every flag the command line (or a file) set, in definition order.
pub fn effective_values(cmd: &clap::Command, m: &clap::ArgMatches) -> Vec<(String, toml_edit::Value)> {
    let mut out = Vec::new();
    for arg in cmd.get_arguments() {
        let (Some(long), id) = (arg.get_long(), arg.get_id().as_str()) else { continue };
        if SKIP.contains(&long) || m.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let raw: Vec<String> = m
            .get_raw(id)
            .map(|vs| vs.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let value = if is_switch(arg) {
            toml_edit::Value::from(true)
        } else if is_repeatable(arg) {
            let mut a = toml_edit::Array::new();
            raw.iter().for_each(|v| a.push(typed(&redact(long, v))));
            toml_edit::Value::Array(a)
        } else {
            match raw.last() {
                Some(v) => typed(&redact(long, v)),
                None => continue,
            }
        };
        out.push((long.to_string(), value));
    }
    out
}

/// A flag's text as the TOML value a file would hold: numbers and booleans bare.
pub fn typed(text: &str) -> toml_edit::Value {
    if let Ok(i) = text.parse::<i64>() {
        return i.into();
    }
    if text == "inf" {
        return f64::INFINITY.into();
    }
    match text {
        "true" => return true.into(),
        "false" => return false.into(),
        _ => {}
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && text.chars().all(|c| c.is_ascii_digit() || ".-+eE".contains(c)) => f.into(),
        _ => text.into(),
    }
}

/// The value of flag `long` with any secret replaced: sensitive header values, and the
/// password of a URL with credentials.
pub fn redact(long: &str, value: &str) -> String {
    if long == "header" {
        if let Some((name, _)) = value.split_once(['=', ':']) {
            if servebench_core::secret::is_sensitive_header(name.trim()) {
                return format!("{name}=<redacted>");
            }
        }
    }
    // URLs (and what may be one): a password or secret query value in them; other values kept
    // as they are (an `@` in a label is no userinfo).
    let url_flag = long.ends_with("url") || long.ends_with("endpoint") || long.contains("proxy");
    if url_flag || value.contains("://") {
        servebench_core::secret::redact_url(value)
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_headers_and_url_passwords_are_redacted() {
        assert_eq!(redact("header", "Authorization=Bearer sk-1"), "Authorization=<redacted>");
        assert_eq!(redact("header", "x-trace=abc"), "x-trace=abc");
        assert_eq!(redact("base-url", "http://u:pw@h:1/v1"), "http://u:<redacted>@h:1/v1");
        assert_eq!(redact("base-url", "http://h:1/v1"), "http://h:1/v1");
        assert_eq!(redact("endpoint", "/v1/completions?token=S8"), "/v1/completions?token=<redacted>");
        assert_eq!(redact("label", "me:you@there"), "me:you@there", "not a URL flag");
    }

    #[test]
    fn values_are_typed_as_a_file_would_hold_them() {
        assert_eq!(typed("4").to_string(), "4");
        assert_eq!(typed("2.5").to_string(), "2.5");
        assert_eq!(typed("inf").to_string(), "inf");
        assert_eq!(typed("50,90").to_string(), "\"50,90\"");
        assert_eq!(typed("1e3x").to_string(), "\"1e3x\"");
    }
}
