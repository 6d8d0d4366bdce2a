//! The JSON Schema of a config file (docs/config.schema.json, for editors), generated from the
//! run's clap definitions: a property per run flag, typed by what the flag's own value parser
//! accepts, with its help and default.

use super::flags::{is_repeatable, is_switch, NOT_IN_A_FILE};
use serde_json::{json, Map, Value};

/// The schema document of a config file for `cmd` (the run's command).
pub fn schema(cmd: &clap::Command) -> Value {
    let mut probe = cmd.clone();
    let mut properties = Map::new();
    let mut names = Vec::new();
    for arg in cmd.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if NOT_IN_A_FILE.contains(&long) {
            continue;
        }
        properties.insert(long.to_string(), property(&mut probe, arg, long));
        names.push(Value::from(long));
        if long.contains('-') {
            names.push(Value::from(long.replace('-', "_")));
        }
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "servebench config file",
        "description": "A servebench config file (--config FILE, TOML): run flags by long name, \
            dashes or underscores, at the top level; command-line flags override them \
            (docs/config.md). Generated from the flag definitions; values are checked by the \
            flags' own parsers when the file is read.",
        "type": "object",
        "propertyNames": { "enum": names },
        "properties": properties,
    })
}

/// The schema of flag `arg`: its value type, help and default.
fn property(probe: &mut clap::Command, arg: &clap::Arg, long: &str) -> Value {
    let mut p = Map::new();
    if let Some(help) = arg.get_help() {
        p.insert("description".into(), Value::from(help.to_string()));
    }
    let item = item_schema(probe, arg, long);
    if is_switch(arg) {
        p.insert("type".into(), "boolean".into());
        p.insert("default".into(), false.into());
        return Value::Object(p);
    }
    if is_repeatable(arg) {
        p.insert("anyOf".into(), json!([item.clone(), { "type": "array", "items": item }]));
    } else if let Value::Object(m) = item {
        p.extend(m);
    }
    if let Some(d) = default_value(arg) {
        p.insert("default".into(), d);
    }
    Value::Object(p)
}

/// The schema of one value of `arg`: its possible values, or the type its parser accepts.
fn item_schema(probe: &mut clap::Command, arg: &clap::Arg, long: &str) -> Value {
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if possible.iter().all(|v| v == "true" || v == "false") && possible.len() == 2 {
        // A `true`/`false` value: a TOML boolean reaches it as its text.
        return json!({ "type": "boolean" });
    }
    if !possible.is_empty() {
        return json!({ "enum": possible });
    }
    let mut accepts = |v: &str| accepts(probe, long, v);
    if accepts("not-a-number") {
        return json!({ "type": "string" });
    }
    // Fractions in and out of [0, 1): spreads and ratios take only the first.
    let fraction = ["0.5", "1.5", "1.5,2.5"].into_iter().any(&mut accepts);
    let number = if fraction { "number" } else { "integer" };
    if accepts("1,2") && !is_repeatable(arg) {
        // A list flag: an array of numbers, one number, or its comma-separated text.
        json!({ "type": [number, "string", "array"], "items": { "type": number } })
    } else if accepts(r#"{"input": 0.5, "output": 0.5}"#) {
        // JSON text (--extra-body), or a number and its per-direction JSON (--random-range-ratio).
        if fraction {
            json!({ "type": [number, "string"] })
        } else {
            json!({ "type": "string" })
        }
    } else if fraction || accepts("1") || accepts("0") {
        json!({ "type": number })
    } else if accepts("true") {
        json!({ "type": "boolean" })
    } else {
        json!({ "type": "string" })
    }
}

/// What a file may give flag `arg` (of `cmd`), in words, for SB133: "an integer", "one of a, b"...
pub fn expected(cmd: &clap::Command, arg: &clap::Arg) -> String {
    let long = arg.get_long().unwrap_or_default();
    let item = item_schema(&mut cmd.clone(), arg, long);
    let word = |t: &Value| match t.as_str() {
        Some("integer") => "an integer",
        Some("number") => "a number",
        Some("boolean") => "a boolean (true or false)",
        Some("array") => "an array of them",
        _ => "a string",
    };
    let text = match (&item["enum"], &item["type"]) {
        (Value::Array(names), _) => {
            let names: Vec<String> =
                names.iter().map(|n| format!("\"{}\"", n.as_str().unwrap_or(""))).collect();
            format!("one of {}", names.join(", "))
        }
        (_, Value::Array(types)) => types.iter().map(word).collect::<Vec<_>>().join(" or "),
        (_, t) => word(t).to_string(),
    };
    if is_repeatable(arg) {
        format!("{text} or an array of them")
    } else {
        text
    }
}

/// Whether the run accepts `--long=value` on its own (conflicts and requirements aside).
fn accepts(probe: &mut clap::Command, long: &str, value: &str) -> bool {
    use clap::error::ErrorKind as K;
    let argv = ["servebench".to_string(), format!("--{long}={value}")];
    match probe.try_get_matches_from_mut(argv) {
        Ok(_) => true,
        Err(e) => matches!(e.kind(), K::ArgumentConflict | K::MissingRequiredArgument),
    }
}

/// The flag's default as a JSON value (numbers bare); none when it has none or it is not finite.
fn default_value(arg: &clap::Arg) -> Option<Value> {
    let defaults: Vec<Value> = arg
        .get_default_values()
        .iter()
        .filter_map(|v| json_of(&super::render::typed(&v.to_string_lossy())))
        .collect();
    match defaults.len() {
        0 => None,
        1 => defaults.into_iter().next(),
        _ => Some(Value::Array(defaults)),
    }
}

/// A TOML value as JSON; `None` for what JSON cannot hold (infinity, dates, tables).
pub fn json_of(v: &toml_edit::Value) -> Option<Value> {
    match v {
        toml_edit::Value::String(s) => Some(Value::from(s.value().clone())),
        toml_edit::Value::Integer(i) => Some(Value::from(*i.value())),
        toml_edit::Value::Float(f) => serde_json::Number::from_f64(*f.value()).map(Value::Number),
        toml_edit::Value::Boolean(b) => Some(Value::from(*b.value())),
        toml_edit::Value::Array(a) => a.iter().map(json_of).collect::<Option<Vec<_>>>().map(Value::Array),
        _ => None,
    }
}

/// The schema as committed: pretty JSON with a final newline.
pub fn schema_text(cmd: &clap::Command) -> String {
    let mut text = serde_json::to_string_pretty(&schema(cmd)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_file::argv::run_command;

    #[test]
    fn flag_types_come_from_their_parsers() {
        let s = schema(&run_command());
        let p = &s["properties"];
        assert_eq!(p["num-prompts"]["type"], "integer");
        assert_eq!(p["num-prompts"]["default"], 1000);
        assert_eq!(p["request-rate"]["type"], "number");
        assert_eq!(p["sim"]["type"], "boolean");
        assert_eq!(p["sim-prefix-caching"]["type"], "boolean");
        assert_eq!(p["random-range-ratio"]["type"], json!(["number", "string"]));
        assert_eq!(p["extra-body"]["type"], "string");
        assert_eq!(p["metric-percentiles"]["items"]["type"], "number");
        assert_eq!(p["sweep-max-concurrency"]["items"]["type"], "integer");
        assert_eq!(p["model"]["type"], "string");
        assert!(p["header"]["anyOf"][1]["type"] == "array", "{}", p["header"]);
        assert!(p.get("config").is_none() && p.get("preset").is_none());
        let names = s["propertyNames"]["enum"].as_array().unwrap();
        assert!(names.contains(&"max_concurrency".into()) && names.contains(&"max-concurrency".into()));
    }

    #[test]
    fn every_preset_validates_against_the_schema() {
        let validator = jsonschema::validator_for(&schema(&run_command())).unwrap();
        for p in crate::config_file::presets::PRESETS {
            let file = crate::config_file::parse::parse(&p.id(), p.text).unwrap();
            // JSON has no infinity: `request-rate = inf` is left out.
            let doc: Map<String, Value> =
                file.entries.iter().filter_map(|e| Some((e.raw_key.clone(), json_of(&e.value)?))).collect();
            let errors: Vec<String> =
                validator.iter_errors(&Value::Object(doc)).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: {errors:?}", p.id());
        }
        let bad = json!({ "num-prompts": "many", "max_concurency": 3 });
        assert_eq!(validator.iter_errors(&bad).count(), 2);
    }

    #[test]
    fn expected_types_are_said_in_words() {
        let cmd = run_command();
        let arg = |l: &str| crate::config_file::argv::find_arg(&cmd, l).unwrap().clone();
        assert_eq!(expected(&cmd, &arg("num-prompts")), "an integer");
        assert_eq!(expected(&cmd, &arg("sim-mode")), "one of \"fixed\", \"engine\"");
        assert_eq!(expected(&cmd, &arg("header")), "a string or an array of them");
        assert_eq!(
            expected(&cmd, &arg("sweep-max-concurrency")),
            "an integer or a string or an array of them"
        );
    }

    /// docs/config.schema.json is this generator's output; `UPDATE_DOCS=1` (or
    /// `INSTA_UPDATE=always`) rewrites it.
    #[test]
    fn docs_config_schema_json_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.schema.json");
        let expected = schema_text(&run_command());
        let update = std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always")
            || std::env::var_os("UPDATE_DOCS").is_some();
        if update {
            std::fs::write(path, &expected).unwrap();
        }
        let actual = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            actual == expected,
            "docs/config.schema.json is stale: run UPDATE_DOCS=1 cargo test -p servebench --lib config_file"
        );
    }
}
