//! Reading a config file: its top-level keys with their values and the line each is on.

use servebench_core::error::BenchError;

/// One `key = value` of a config file.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The key with `_` spelled `-` (the flag's long name).
    pub key: String,
    /// The key as written.
    pub raw_key: String,
    pub value: toml_edit::Value,
    /// 1-based line of the key.
    pub line: usize,
    /// The value is a `[key]` section: the keys below its header, up to the next header (a
    /// flag written there by mistake is part of the table, not a flag).
    pub section: bool,
}

/// A parsed config file: where it came from and its entries, in file order.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub name: String,
    pub entries: Vec<Entry>,
}

/// Parses `text` (the content of `name`) into its entries: every key is a flag at the top level;
/// a table (`[extra-body]`, `extra-body = { … }`) is the JSON object such a flag takes; an array
/// of tables is kept for [`super::argv`] to refuse (no flag takes one).
pub fn parse(name: &str, text: &str) -> Result<ConfigFile, BenchError> {
    let doc = toml_edit::Document::parse(text).map_err(|e| BenchError::ConfigFileUnreadable {
        file: name.to_string(),
        why: format!("{}{}", syntax_error(text, &e), yaml_hint(name)),
    })?;
    let table = doc.as_table();
    let mut entries = Vec::new();
    for (k, item) in table.iter() {
        let line = table.key(k).and_then(toml_edit::Key::span).map_or(0, |s| line_of(text, s.start));
        // An `[extra-body]` section is the inline table `extra-body = { … }` (a JSON object); an
        // array of tables is kept as an array of inline tables, for the flag lookup to refuse
        // (an unknown key first, SB131; else no flag takes it, SB133).
        let section = item.as_table().map(|t| toml_edit::Value::InlineTable(t.clone().into_inline_table()));
        let tables = item.as_array_of_tables().map(|a| {
            toml_edit::Value::Array(
                a.iter().map(|t| toml_edit::Value::InlineTable(t.clone().into_inline_table())).collect(),
            )
        });
        let is_section = section.is_some();
        let Some(value) = item.as_value().cloned().or(section).or(tables) else {
            return Err(BenchError::ConfigTypeError {
                file: name.to_string(),
                line,
                key: k.to_string(),
                expected: "a value (keys are flags at the top level)".into(),
                found: "an empty item".into(),
            });
        };
        let key = k.replace('_', "-");
        // TOML refuses a key written twice; the same flag in its two spellings is refused alike.
        if let Some(first) = entries.iter().find(|e: &&Entry| e.key == key) {
            return Err(BenchError::ConfigFileUnreadable {
                file: name.to_string(),
                why: format!(
                    "line {line}: {k} is {} of line {} again (one flag, two spellings)",
                    first.raw_key, first.line
                ),
            });
        }
        entries.push(Entry { key, raw_key: k.to_string(), value, line, section: is_section });
    }
    Ok(ConfigFile { name: name.to_string(), entries })
}

/// Reads and parses the file at `path`.
pub fn read(path: &str) -> Result<ConfigFile, BenchError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BenchError::ConfigFileUnreadable { file: path.to_string(), why: e.to_string() })?;
    parse(path, &text)
}

/// 1-based line of byte offset `at`.
pub fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

/// A YAML file (vLLM's generic `--config` reads YAML) fails as TOML with a message about TOML
/// syntax that does not say why: named when the file's extension says YAML.
fn yaml_hint(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        " (this looks like a YAML file: servebench's --config reads TOML — `key = value`, strings \
         quoted; `servebench config init` writes one, docs/config.md says why not YAML)"
    } else {
        ""
    }
}

fn syntax_error(text: &str, e: &toml_edit::TomlError) -> String {
    let first = e.message().lines().next().unwrap_or("invalid TOML").to_string();
    match e.span() {
        Some(s) => format!("line {}: invalid TOML: {first}", line_of(text, s.start)),
        None => format!("invalid TOML: {first}"),
    }
}

/// The TOML type name of `v`, for messages.
pub fn type_name(v: &toml_edit::Value) -> &'static str {
    match v {
        toml_edit::Value::String(_) => "a string",
        toml_edit::Value::Integer(_) => "an integer",
        toml_edit::Value::Float(_) => "a float",
        toml_edit::Value::Boolean(_) => "a boolean",
        toml_edit::Value::Datetime(_) => "a date-time",
        toml_edit::Value::Array(a) if !a.is_empty() && a.iter().all(|v| v.is_inline_table()) => {
            "an array of tables"
        }
        toml_edit::Value::Array(_) => "an array",
        toml_edit::Value::InlineTable(_) => "a table",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_get_their_line_and_dash_spelling() {
        let f = parse("f.toml", "# c\nmax_concurrency = 4\n\nrequest-rate = 2.5\n").unwrap();
        assert_eq!(f.entries[0].key, "max-concurrency");
        assert_eq!(f.entries[0].line, 2);
        assert_eq!(f.entries[1].line, 4);
    }

    #[test]
    fn an_array_of_tables_is_kept_for_the_flag_lookup_with_its_line() {
        let f = parse("f.toml", "seed = 1\n[[load]]\nx = 1\n").unwrap();
        assert_eq!((f.entries[1].line, type_name(&f.entries[1].value)), (2, "an array of tables"));
        // A table is a flag's JSON object (config_file::argv).
        let f = parse("f.toml", "seed = 1\n[extra-body]\nx = 1\n").unwrap();
        assert_eq!((f.entries[1].key.as_str(), f.entries[1].line), ("extra-body", 2));
    }

    /// Pins the refusal of one flag written in both spellings: the later one used to win
    /// silently.
    #[test]
    fn a_flag_in_both_spellings_is_refused_as_a_repeated_key() {
        let e = parse("f.toml", "num-prompts = 3\nnum_prompts = 2\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB130");
        assert!(e.to_string().contains("line 2: num_prompts is num-prompts of line 1 again"), "{e}");
    }

    /// Pins a YAML file given to `--config` (vLLM's generic `--config` takes YAML): the TOML
    /// error ("key with no value, expected '='") never said the format was the problem.
    #[test]
    fn a_yaml_file_is_named_as_yaml() {
        let e = parse("bench.yaml", "model: m\nnum-prompts: 3\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB130");
        assert!(
            e.to_string().contains("this looks like a YAML file: servebench's --config reads TOML"),
            "{e}"
        );
        let e = parse("bench.toml", "model: m\n").unwrap_err();
        assert!(!e.to_string().contains("YAML"), "{e}");
    }

    #[test]
    fn a_syntax_error_names_its_line() {
        let e = parse("f.toml", "seed = 1\nrate = = 2\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert_eq!(e.code().as_str(), "SB130");
    }
}
