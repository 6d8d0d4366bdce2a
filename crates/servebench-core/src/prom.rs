//! The Prometheus text exposition format (0.0.4), both ways, once for the workspace: the
//! writer our `/metrics` endpoint and the simulator's use, and the lenient reader that scrapes
//! a server's `/metrics` (vLLM, SGLang, TGI, llama.cpp). A strict validator for tests lives in
//! the test kit (`servebench_testkit::prom_text`).

use std::fmt::Write as _;

/// A metric family's kind (`# TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    /// The kind as the `# TYPE` line spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// Writes `# HELP` and `# TYPE` lines of a family.
pub fn family(out: &mut String, name: &str, kind: Kind, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {}", kind.as_str());
}

/// Writes one sample line; label values are escaped (`\\`, `\"`, `\n`).
pub fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"{}\"", escape_label(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", value_text(value));
}

/// A family of one unlabelled sample.
pub fn scalar(out: &mut String, name: &str, kind: Kind, help: &str, value: f64) {
    family(out, name, kind, help);
    sample(out, name, &[], value);
}

/// A value as the format spells it: `+Inf`, `-Inf`, `NaN`, else the shortest decimal that
/// reads back as the same `f64`.
pub fn value_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        // Rust's shortest round-trip decimal: `3` for 3.0, `0.25`, `1e-7`.
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// One sample line of the text format: metric name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// A malformed line as an error shows it: control characters escaped (a binary body, such as a
/// compressed or protobuf exposition, must not reach the terminal raw) and cut to 80 characters.
fn shown_line(line: &str) -> String {
    const MAX: usize = 80;
    let escaped: String = line.escape_debug().collect();
    match escaped.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &escaped[..at]),
        None => escaped,
    }
}

/// Parses the Prometheus text exposition format (0.0.4): `# ` comment lines and blank lines
/// are skipped; a sample is `name[{label="value",…}] value [timestamp]`, names may contain
/// colons (vLLM's do), label values may contain `\\`, `\"` and `\n` escapes, values may be
/// `+Inf`, `-Inf` or `NaN`. Errors name the first malformed line.
pub fn parse_text(text: &str) -> std::result::Result<Vec<PromSample>, String> {
    let mut out = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}: {}", no + 1, shown_line(line));
        let name_end = line.find(|c: char| c == '{' || c.is_whitespace()).ok_or_else(|| bad("no value"))?;
        let name = &line[..name_end];
        if name.is_empty()
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            || name.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(bad("bad metric name"));
        }
        let mut rest = &line[name_end..];
        let mut labels = Vec::new();
        if let Some(after) = rest.strip_prefix('{') {
            let mut chars = after.char_indices().peekable();
            let mut end = None;
            loop {
                while chars.next_if(|(_, c)| c.is_whitespace() || *c == ',').is_some() {}
                match chars.peek() {
                    Some((i, '}')) => {
                        end = Some(*i);
                        break;
                    }
                    None => break,
                    _ => {}
                }
                let mut key = String::new();
                while let Some((_, c)) = chars.next_if(|(_, c)| *c != '=' && *c != '}') {
                    key.push(c);
                }
                if chars.next().map(|x| x.1) != Some('=') || chars.next().map(|x| x.1) != Some('"') {
                    return Err(bad("bad label"));
                }
                let mut value = String::new();
                loop {
                    match chars.next().map(|x| x.1) {
                        Some('\\') => match chars.next().map(|x| x.1) {
                            Some('n') => value.push('\n'),
                            Some(c) => value.push(c),
                            None => return Err(bad("unterminated label value")),
                        },
                        Some('"') => break,
                        Some(c) => value.push(c),
                        None => return Err(bad("unterminated label value")),
                    }
                }
                labels.push((key.trim().to_owned(), value));
            }
            let end = end.ok_or_else(|| bad("unterminated labels"))?;
            rest = &after[end + 1..];
        }
        let value = rest.split_whitespace().next().ok_or_else(|| bad("no value"))?;
        let value = match value {
            "+Inf" | "Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse::<f64>().map_err(|_| bad("bad value"))?,
        };
        out.push(PromSample { name: name.to_owned(), labels, value });
    }
    Ok(out)
}

/// The `# TYPE name kind` lines of an exposition: each family's declared kind (`counter`,
/// `gauge`, `histogram`; `summary`, `untyped` and unknown kinds are left out).
pub fn parse_types(text: &str) -> Vec<(String, Kind)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if (words.next(), words.next()) != (Some("#"), Some("TYPE")) {
            continue;
        }
        let (Some(name), Some(kind)) = (words.next(), words.next()) else { continue };
        let kind = match kind {
            "counter" => Kind::Counter,
            "gauge" => Kind::Gauge,
            "histogram" => Kind::Histogram,
            _ => continue,
        };
        out.push((name.to_owned(), kind));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary body (gzip read as text) is shown escaped and cut in the error, never raw.
    #[test]
    fn a_binary_line_is_shown_escaped_and_cut() {
        let body = format!("\u{1f}\u{fffd}\u{8}\u{1b}[2J{}\n", "x".repeat(300));
        let err = parse_text(&body).unwrap_err();
        assert!(!err.chars().any(|c| c.is_control()), "{err:?}");
        assert!(err.contains("\\u{1b}") && err.ends_with('…'), "{err}");
        assert!(err.chars().count() < 140, "{err}");
    }

    #[test]
    fn what_the_writer_writes_the_reader_reads_back() {
        let mut out = String::new();
        scalar(&mut out, "a_total", Kind::Counter, "A.", 3.0);
        family(&mut out, "b", Kind::Gauge, "B.");
        sample(&mut out, "b", &[("model_name", "m\"x\\y\nz")], 0.25);
        sample(&mut out, "b", &[("le", "+Inf")], f64::INFINITY);
        assert!(out.starts_with("# HELP a_total A.\n# TYPE a_total counter\na_total 3\n"), "{out}");
        let back = parse_text(&out).unwrap();
        assert_eq!(back.len(), 3);
        assert_eq!(back[1].labels, vec![("model_name".to_owned(), "m\"x\\y\nz".to_owned())]);
        assert_eq!(back[1].value, 0.25);
        assert_eq!(back[2].value, f64::INFINITY);
    }

    #[test]
    fn type_lines_give_each_familys_kind() {
        let t = "# HELP a A.\n# TYPE a counter\n# TYPE b histogram\n# TYPE c summary\n#TYPE d gauge\n# TYPE e gauge\n";
        let kinds = parse_types(t);
        assert_eq!(
            kinds,
            vec![("a".into(), Kind::Counter), ("b".into(), Kind::Histogram), ("e".into(), Kind::Gauge)]
        );
    }

    #[test]
    fn values_are_spelled_as_the_format_wants() {
        assert_eq!(value_text(f64::NAN), "NaN");
        assert_eq!(value_text(f64::NEG_INFINITY), "-Inf");
        assert_eq!(value_text(12.0), "12");
        assert_eq!(value_text(0.5), "0.5");
    }
}
