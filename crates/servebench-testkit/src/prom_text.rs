//! A strict parser of the Prometheus text exposition format (0.0.4), for tests: it rejects
//! anything a Prometheus server would reject, and checks the histogram invariants.

use std::collections::{BTreeMap, HashMap};

/// One sample: metric name, labels (sorted), value.
pub type Series = (String, BTreeMap<String, String>);

/// A parsed exposition.
#[derive(Debug, Default)]
pub struct Exposition {
    /// Family name → type.
    pub types: HashMap<String, String>,
    pub samples: HashMap<Series, f64>,
}

impl Exposition {
    /// The value of `name` with exactly `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let l = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.samples.get(&(name.to_string(), l)).copied()
    }

    /// Sum of every sample of `name` (any labels).
    pub fn sum(&self, name: &str) -> f64 {
        self.samples.iter().filter(|((n, _), _)| n == name).map(|(_, v)| v).sum()
    }
}

fn valid_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn valid_label_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn parse_value(s: &str) -> Result<f64, String> {
    match s {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => s.parse::<f64>().map_err(|e| format!("bad value '{s}': {e}")),
    }
}

fn parse_labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(' ');
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        let eq = rest.find('=').ok_or("label without '='")?;
        let name = rest[..eq].trim();
        if !valid_label_name(name) {
            return Err(format!("bad label name '{name}'"));
        }
        let mut chars = rest[eq + 1..].char_indices();
        if chars.next().map(|c| c.1) != Some('"') {
            return Err("label value not quoted".into());
        }
        let mut value = String::new();
        let mut end = None;
        let mut escaped = false;
        for (i, ch) in chars {
            if escaped {
                value.push(match ch {
                    'n' => '\n',
                    '\\' => '\\',
                    '"' => '"',
                    other => return Err(format!("bad escape '\\{other}'")),
                });
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                end = Some(eq + 1 + i + 1);
                break;
            } else {
                value.push(ch);
            }
        }
        let end = end.ok_or("unterminated label value")?;
        if labels.insert(name.to_string(), value).is_some() {
            return Err(format!("duplicate label '{name}'"));
        }
        rest = &rest[end..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

/// The family a sample name belongs to, given the declared types.
fn family_of<'a>(name: &'a str, types: &HashMap<String, String>) -> Option<&'a str> {
    if types.contains_key(name) {
        return Some(name);
    }
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix) {
            if types.get(base).is_some_and(|t| t == "histogram" || (t == "summary" && suffix != "_bucket")) {
                return Some(base);
            }
        }
    }
    None
}

/// Parses `text` strictly; every error names its line.
pub fn parse(text: &str) -> Result<Exposition, String> {
    if !text.is_empty() && !text.ends_with('\n') {
        return Err("exposition does not end with a newline".into());
    }
    let mut exp = Exposition::default();
    let mut helped: HashMap<String, ()> = HashMap::new();
    let mut seen_samples: HashMap<String, ()> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let err = |m: String| format!("line {}: {m}: {line:?}", n + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let mut parts = rest.trim_start().splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("TYPE"), Some(name), Some(kind)) => {
                    if !valid_name(name) {
                        return Err(err("bad metric name".into()));
                    }
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                        return Err(err(format!("unknown type {kind}")));
                    }
                    if seen_samples.contains_key(name) {
                        return Err(err("TYPE after samples".into()));
                    }
                    if exp.types.insert(name.to_string(), kind.to_string()).is_some() {
                        return Err(err("second TYPE line".into()));
                    }
                }
                (Some("HELP"), Some(name), _)
                    if !valid_name(name) || helped.insert(name.to_string(), ()).is_some() =>
                {
                    return Err(err("bad or repeated HELP".into()));
                }
                _ => {} // plain comment
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| err("no value".into()))?;
        let name = &line[..name_end];
        if !valid_name(name) {
            return Err(err("bad metric name".into()));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end + 1..]).map_err(err)?
        } else {
            (BTreeMap::new(), &line[name_end..])
        };
        let mut fields = rest.split_whitespace();
        let value = parse_value(fields.next().ok_or_else(|| err("no value".into()))?).map_err(err)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|e| err(format!("bad timestamp: {e}")))?;
        }
        if fields.next().is_some() {
            return Err(err("trailing fields".into()));
        }
        let family = family_of(name, &exp.types).ok_or_else(|| err("sample without a TYPE".into()))?;
        seen_samples.insert(family.to_string(), ());
        let kind = &exp.types[family];
        if kind == "counter" && (value < 0.0 || value.is_nan()) {
            return Err(err("negative counter".into()));
        }
        if name.ends_with("_bucket") && !labels.contains_key("le") {
            return Err(err("bucket without le".into()));
        }
        if exp.samples.insert((name.to_string(), labels), value).is_some() {
            return Err(err("duplicate series".into()));
        }
    }
    check_histograms(&exp)?;
    Ok(exp)
}

fn check_histograms(exp: &Exposition) -> Result<(), String> {
    for (family, kind) in &exp.types {
        if kind != "histogram" {
            continue;
        }
        let bucket_name = format!("{family}_bucket");
        let mut groups: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        for ((name, labels), v) in &exp.samples {
            if *name == bucket_name {
                let mut rest = labels.clone();
                let le = parse_value(&rest.remove("le").unwrap_or_default())?;
                groups.entry(rest).or_default().push((le, *v));
            }
        }
        if groups.is_empty() {
            return Err(format!("histogram {family} has no buckets"));
        }
        for (labels, mut buckets) in groups {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            if buckets.last().map(|b| b.0) != Some(f64::INFINITY) {
                return Err(format!("histogram {family} lacks le=\"+Inf\""));
            }
            if buckets.windows(2).any(|w| w[1].1 < w[0].1) {
                return Err(format!("histogram {family}: buckets not cumulative"));
            }
            let count = exp
                .samples
                .get(&(format!("{family}_count"), labels.clone()))
                .ok_or(format!("histogram {family} lacks _count"))?;
            if !exp.samples.contains_key(&(format!("{family}_sum"), labels)) {
                return Err(format!("histogram {family} lacks _sum"));
            }
            if buckets.last().map(|b| b.1) != Some(*count) {
                return Err(format!("histogram {family}: +Inf bucket differs from _count"));
            }
        }
    }
    Ok(())
}
