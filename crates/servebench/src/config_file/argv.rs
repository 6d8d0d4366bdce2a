//! A config file's entries as command-line tokens, each checked alone by the run's own clap
//! definitions (the same value parsers, so the same coded errors), errors naming file:line:key.

pub use super::flags::{find_arg, is_repeatable, is_switch, run_command, NOT_IN_A_FILE};
use super::parse::{type_name, ConfigFile, Entry};
use servebench_core::error::BenchError;

/// Every entry of `file` as tokens, each validated alone. The first bad entry is the error.
pub fn to_tokens(cmd: &clap::Command, file: &ConfigFile) -> Result<Vec<(String, Vec<String>)>, BenchError> {
    file.entries.iter().map(|e| entry_tokens(cmd, &file.name, e).map(|t| (e.key.clone(), t))).collect()
}

fn entry_tokens(cmd: &clap::Command, file: &str, e: &Entry) -> Result<Vec<String>, BenchError> {
    let arg = match find_arg(cmd, &e.key) {
        Some(a) if !NOT_IN_A_FILE.contains(&e.key.as_str()) => a,
        _ => {
            return Err(BenchError::ConfigUnknownKey {
                file: file.to_string(),
                line: e.line,
                key: e.raw_key.clone(),
                hint: suggestion(cmd, &e.key),
            })
        }
    };
    let type_error = |expected: &str| BenchError::ConfigTypeError {
        file: file.to_string(),
        line: e.line,
        key: e.raw_key.clone(),
        expected: expected.to_string(),
        found: type_name(&e.value).to_string(),
    };
    let flag = format!("--{}", e.key);
    let tokens = if is_switch(arg) {
        match e.value.as_bool() {
            // `false` is the switch left out: its default (`no-KEY = true` gives a `--no-KEY`).
            Some(true) => vec![flag],
            Some(false) => Vec::new(),
            None => return Err(type_error("a boolean (true or false)")),
        }
    } else if let Some(array) = e.value.as_array() {
        let items: Option<Vec<String>> = array.iter().map(scalar).collect();
        let items = items.ok_or_else(|| type_error(&super::schema::expected(cmd, arg)))?;
        if is_repeatable(arg) {
            items.into_iter().map(|v| format!("{flag}={v}")).collect()
        } else {
            vec![format!("{flag}={}", items.join(","))]
        }
    } else if let Some(table) = e.value.as_inline_table().filter(|_| takes_json_object(arg)) {
        // A table is the JSON object a flag such as --extra-body or --random-range-ratio takes
        // as text: `extra-body = { temperature = 0.5 }` (or an `[extra-body]` section) was
        // refused, asking for a string. The flag's own parser judges the object.
        let bad_value = |why: String| BenchError::ConfigBadValue {
            file: file.to_string(),
            line: e.line,
            key: e.raw_key.clone(),
            why,
        };
        if e.section {
            if let Some(why) = flag_in_section(cmd, &e.raw_key, table) {
                return Err(bad_value(why));
            }
        }
        vec![format!("{flag}={}", json_of_table(table).map_err(bad_value)?)]
    } else {
        let v = scalar(&e.value).ok_or_else(|| type_error(&super::schema::expected(cmd, arg)))?;
        vec![format!("{flag}={v}")]
    };
    check_alone(cmd, &tokens).map_err(|why| BenchError::ConfigBadValue {
        file: file.to_string(),
        line: e.line,
        key: e.raw_key.clone(),
        why,
    })?;
    Ok(tokens)
}

/// The flags whose value is a JSON object, the only ones a TOML table can stand for; a table
/// for any other flag (a path, a name, a number) stays a type error (SB133).
const JSON_OBJECT_FLAGS: [&str; 4] =
    ["extra-body", "chat-template-kwargs", "random-range-ratio", "random-mm-limit-mm-per-prompt"];

fn takes_json_object(arg: &clap::Arg) -> bool {
    arg.get_long().is_some_and(|l| JSON_OBJECT_FLAGS.contains(&l))
}

/// A key of a `[section]` written as a flag (`max-concurrency`: a request body's fields are
/// `snake_case`, never dashed): TOML puts every key below a section header into that section,
/// so `max-concurrency = 4` written after `[extra-body]` would be sent in the request body, not
/// set the flag.
fn flag_in_section(cmd: &clap::Command, section: &str, t: &toml_edit::InlineTable) -> Option<String> {
    // Sub-tables too: keys after `[extra-body.guided_decoding]` belong to that table.
    fn find<'t>(cmd: &clap::Command, t: &'t toml_edit::InlineTable) -> Option<&'t str> {
        t.iter().find_map(|(k, v)| {
            if k.contains('-') && find_arg(cmd, k).is_some() {
                return Some(k);
            }
            v.as_inline_table().and_then(|sub| find(cmd, sub))
        })
    }
    let key = find(cmd, t)?;
    Some(format!(
        "`{key}` is below the [{section}] header, so it is a field of that table, not the --{key} flag; \
         move it above the [{section}] line (TOML puts every key after a section header into the section)"
    ))
}

/// A TOML table as JSON text (keys in file order; a date-time as its TOML text). A float JSON
/// cannot hold (nan, inf) is refused, naming its key.
fn json_of_table(t: &toml_edit::InlineTable) -> Result<String, String> {
    fn json(key: &str, v: &toml_edit::Value) -> Result<serde_json::Value, String> {
        use serde_json::Value as J;
        Ok(match v {
            toml_edit::Value::String(s) => J::from(s.value().clone()),
            toml_edit::Value::Integer(i) => J::from(*i.value()),
            toml_edit::Value::Float(f) => {
                serde_json::Number::from_f64(*f.value()).map(J::Number).ok_or_else(|| {
                    format!("`{key}` is {}, which JSON cannot hold; give a finite number", f.value())
                })?
            }
            toml_edit::Value::Boolean(b) => J::from(*b.value()),
            toml_edit::Value::Datetime(d) => J::from(d.value().to_string()),
            toml_edit::Value::Array(a) => J::Array(a.iter().map(|v| json(key, v)).collect::<Result<_, _>>()?),
            toml_edit::Value::InlineTable(t) => object(t)?,
        })
    }
    fn object(t: &toml_edit::InlineTable) -> Result<serde_json::Value, String> {
        t.iter()
            .map(|(k, v)| json(k, v).map(|v| (k.to_owned(), v)))
            .collect::<Result<_, _>>()
            .map(serde_json::Value::Object)
    }
    object(t).map(|o| o.to_string())
}

/// A scalar TOML value as the text a flag takes.
fn scalar(v: &toml_edit::Value) -> Option<String> {
    match v {
        toml_edit::Value::String(s) => Some(s.value().clone()),
        toml_edit::Value::Integer(i) => Some(i.value().to_string()),
        toml_edit::Value::Float(f) => Some(float_text(*f.value())),
        toml_edit::Value::Boolean(b) => Some(b.value().to_string()),
        _ => None,
    }
}

fn float_text(f: f64) -> String {
    if f.is_infinite() && f > 0.0 {
        "inf".to_string()
    } else {
        f.to_string()
    }
}

/// Parses `tokens` alone; a refusal of the value is its reason (the coded error's line when the
/// flag's parser gave one). Errors that need other flags (conflicts, requirements) are left to
/// the merged command line.
fn check_alone(cmd: &clap::Command, tokens: &[String]) -> Result<(), String> {
    use clap::error::ErrorKind as K;
    use std::error::Error as _;
    let argv = std::iter::once("servebench".to_string()).chain(tokens.iter().cloned());
    match cmd.clone().try_get_matches_from(argv) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), K::ArgumentConflict | K::MissingRequiredArgument) => Ok(()),
        Err(e) => Err(match e.source().and_then(|s| s.downcast_ref::<BenchError>()) {
            Some(coded) => format!("{coded} ({})", coded.code()),
            None => clap_reason(&e),
        }),
    }
}

fn clap_reason(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid value");
    line.trim_start_matches("error: ").to_string()
}

/// `; did you mean 'KEY'?` for the closest run flag, when one is close.
fn suggestion(cmd: &clap::Command, key: &str) -> String {
    cmd.get_arguments()
        .filter_map(clap::Arg::get_long)
        .filter(|l| !NOT_IN_A_FILE.contains(l))
        .map(|l| (edit_distance(key, l), l))
        .filter(|(d, l)| *d <= 2.max(l.len() / 4))
        .min()
        .map_or_else(String::new, |(_, l)| format!(" (did you mean '{l}'?)"))
}

/// Levenshtein distance of two ASCII-ish strings.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_file::parse::parse;

    fn tokens(text: &str) -> Result<Vec<String>, BenchError> {
        let f = parse("f.toml", text)?;
        Ok(to_tokens(&run_command(), &f)?.into_iter().flat_map(|(_, t)| t).collect())
    }

    #[test]
    fn values_become_flags_repeatables_repeat_and_false_switches_vanish() {
        let t = tokens(
            "max_concurrency = 4\nrequest-rate = inf\nheader = [\"a=1\", \"b=2\"]\nsim = true\nsave-result = false\ntop-k = -1\n",
        );
        assert_eq!(
            t.unwrap(),
            [
                "--max-concurrency=4",
                "--request-rate=inf",
                "--header=a=1",
                "--header=b=2",
                "--sim",
                "--top-k=-1"
            ]
        );
    }

    /// Pins a TOML table as the JSON object a flag takes: `extra-body = { temperature = 0.5 }`
    /// (and an `[extra-body]` section) was refused, asking for a JSON string in TOML quotes.
    #[test]
    fn a_table_is_the_json_object_a_flag_takes() {
        let inline = tokens("extra-body = { temperature = 0.5, stop = [\"a\", \"b\"], n = 2 }\n").unwrap();
        assert_eq!(inline, [r#"--extra-body={"temperature":0.5,"stop":["a","b"],"n":2}"#]);
        let section =
            tokens("seed = 3\n[extra-body]\ntemperature = 0.5\nstop = [\"a\", \"b\"]\nn = 2\n").unwrap();
        assert_eq!(section, ["--seed=3", r#"--extra-body={"temperature":0.5,"stop":["a","b"],"n":2}"#]);
        let ratio = tokens("random-range-ratio = { input = 0.2, output = 0.5 }\n").unwrap();
        assert_eq!(ratio, [r#"--random-range-ratio={"input":0.2,"output":0.5}"#]);
        // A flag that takes free text but no object refuses it by its own parser, naming the key.
        let e = tokens("\nstart-at = { a = 1 }\n").unwrap_err();
        assert!(e.to_string().contains("f.toml:2: key 'start-at'"), "{e}");
    }

    /// Pins tables given to flags that take no JSON object: `model = { a = 1 }` was sent as the
    /// model name `{"a":1}` (and a path flag took it as a file name). Only the JSON-object flags
    /// take a table; the rest is SB133 naming the type expected.
    #[test]
    fn a_table_for_a_text_flag_that_takes_no_object_is_sb133() {
        for entry in ["model = { a = 1 }\n", "dataset-path = { a = 1 }\n", "[tokenizer]\nx = 1\n"] {
            let e = tokens(entry).unwrap_err();
            assert_eq!(e.code().as_str(), "SB133", "{entry}: {e}");
            assert!(e.to_string().contains("a table"), "{entry}: {e}");
        }
    }

    /// Pins a float JSON cannot hold in a table: `extra-body = { temperature = nan }` was sent as
    /// `{"temperature":null}`. Refused (SB132) naming the key.
    #[test]
    fn a_non_finite_float_in_a_table_is_refused_naming_its_key() {
        for entry in ["extra-body = { temperature = nan }\n", "[extra-body]\nx = { y = [inf] }\n"] {
            let e = tokens(entry).unwrap_err();
            assert_eq!(e.code().as_str(), "SB132", "{entry}: {e}");
            assert!(e.to_string().contains("which JSON cannot hold"), "{entry}: {e}");
        }
    }

    /// Pins the TOML pitfall of a section: every key after `[extra-body]` belongs to it, so a
    /// flag written there (`max-concurrency = 4`) was sent in the request body and the run had no
    /// cap. A dashed key naming a flag (a body's fields are snake_case) is refused, naming the fix.
    #[test]
    fn a_flag_written_below_a_section_header_is_refused() {
        let e = tokens("seed = 3\n[extra-body]\ntemperature = 0.5\nmax-concurrency = 4\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB132", "{e}");
        let text = e.to_string();
        assert!(text.contains("f.toml:2") && text.contains("move it above the [extra-body] line"), "{text}");
        // Inline, the table's extent is plain: a dashed key there is the user's own body field.
        assert!(tokens("extra-body = { my-field = 1 }\n").is_ok());
        // Below a sub-table header as well (`[extra-body.guided_decoding]`).
        let e = tokens("[extra-body.guided_decoding]\nbackend = \"x\"\nmax-concurrency = 4\n").unwrap_err();
        assert!(e.to_string().contains("`max-concurrency` is below the [extra-body] header"), "{e}");
    }

    /// Pins an array of tables of an unknown key (`[[load]]`): it was SB133 ("an array of
    /// tables") before the key was looked up; an unknown key is SB131 with a suggestion, and a
    /// flag given an array of tables is SB133.
    #[test]
    fn an_array_of_tables_is_an_unknown_key_or_a_type_error() {
        let e = tokens("seed = 1\n[[load]]\nx = 1\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB131", "{e}");
        let e = tokens("[[extra-body]]\nx = 1\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB133", "{e}");
        assert!(e.to_string().contains("an array of tables"), "{e}");
    }

    #[test]
    fn a_false_switch_is_its_default_even_when_a_no_switch_exists() {
        assert_eq!(tokens("self-timed = false\n").unwrap(), Vec::<String>::new());
        assert_eq!(tokens("no-self-timed = true\n").unwrap(), ["--no-self-timed"]);
    }

    #[test]
    fn an_unknown_key_is_sb131_with_its_line_and_a_suggestion() {
        let e = tokens("seed = 1\nmax-concurency = 3\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB131");
        let text = e.to_string();
        assert!(text.contains("f.toml:2") && text.contains("did you mean 'max-concurrency'"), "{text}");
    }

    #[test]
    fn a_refused_value_is_sb132_with_the_parsers_reason() {
        let e = tokens("\nrequest-rate = \"fast\"\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB132");
        assert!(e.to_string().contains("f.toml:2: key 'request-rate'"), "{e}");
    }

    #[test]
    fn a_table_for_a_number_is_sb133() {
        let e = tokens("num-prompts = { a = 1 }\n").unwrap_err();
        assert_eq!(e.code().as_str(), "SB133");
        assert!(e.to_string().contains("f.toml:1"), "{e}");
    }

    #[test]
    fn a_string_for_a_switch_is_sb133() {
        assert_eq!(tokens("sim = \"yes\"\n").unwrap_err().code().as_str(), "SB133");
    }
}
