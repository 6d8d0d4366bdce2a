//! The effective config a result records (its `config` key) and reruns from it
//! (`--config-from-result RESULT`): the recorded flags read back as a config file.

use super::parse::{ConfigFile, Entry};
use serde_json::{Map, Value};
use servebench_core::error::BenchError;

/// The result key holding the effective config.
pub const KEY: &str = "config";

/// The flags a parsed run command line sets (by `--preset`, `--config`, `--config-from-result` or
/// itself), by long name, secrets redacted: what a result records as its `config`.
pub fn recorded(cmd: &clap::Command, m: &clap::ArgMatches) -> Map<String, Value> {
    super::render::effective_values(cmd, m)
        .into_iter()
        .map(|(k, v)| {
            // What JSON cannot hold (an infinite rate) is kept as the flag's text.
            let json = super::schema::json_of(&v).unwrap_or_else(|| Value::from(v.to_string().trim()));
            (k, json)
        })
        .collect()
}

/// The recorded config of the result at `path` as a config file, and the keys left out because
/// their values were redacted (they must be given again).
pub fn read(path: &str) -> Result<(ConfigFile, Vec<String>), BenchError> {
    let invalid = |why: String| BenchError::ConfigFromResultInvalid { file: path.to_string(), why };
    let text = std::fs::read_to_string(path).map_err(|e| invalid(e.to_string()))?;
    let doc = last_document(&text).ok_or_else(|| invalid("not a JSON result".into()))?;
    let Some(Value::Object(config)) = doc.get(KEY) else {
        return Err(invalid(format!(
            "it has no `{KEY}` object (a result written by servebench before it recorded one?)"
        )));
    };
    let name = format!("{path}#{KEY}");
    let (mut entries, mut redacted) = (Vec::new(), Vec::new());
    for (i, (key, value)) in config.iter().enumerate() {
        if value.to_string().contains(servebench_core::secret::REDACTED) {
            redacted.push(key.clone());
            continue;
        }
        let value =
            toml_of(value).ok_or_else(|| invalid(format!("key '{key}' holds {value}, not a flag value")))?;
        entries.push(Entry {
            key: key.replace('_', "-"),
            raw_key: key.clone(),
            value,
            line: i + 1,
            section: false,
        });
    }
    Ok((ConfigFile { name, entries }, redacted))
}

/// The result document of `text`: the whole file, or its last line (`--append-result` files
/// hold one document per line).
fn last_document(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| {
            text.lines().rev().find(|l| !l.trim().is_empty()).and_then(|l| serde_json::from_str(l).ok())
        })
        .filter(Value::is_object)
}

/// A recorded JSON value as the TOML value a config file would hold.
fn toml_of(v: &Value) -> Option<toml_edit::Value> {
    Some(match v {
        Value::String(s) => s.as_str().into(),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Value::Array(a) => {
            let mut arr = toml_edit::Array::new();
            for item in a {
                arr.push(toml_of(item)?);
            }
            toml_edit::Value::Array(arr)
        }
        Value::Null | Value::Object(_) => return None,
    })
}

/// Refuses a rerun whose result would be written over the result it reruns (SB136): `args` are
/// the merged run flags (`--flag=value` tokens and the command line's own).
pub fn check_not_overwritten(source: &str, args: &[String]) -> Result<(), BenchError> {
    let has = |flag: &str| args.iter().any(|a| a == flag || a == &format!("{flag}=true"));
    if has("--append-result") || !has("--save-result") {
        return Ok(());
    }
    let Some(name) = super::flag_value(args, "--result-filename") else { return Ok(()) };
    let dir = super::flag_value(args, "--result-dir").unwrap_or_default();
    let target = std::path::Path::new(&dir).join(name);
    let same = match (std::fs::canonicalize(&target), std::fs::canonicalize(source)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Err(BenchError::RerunOverwritesResult { file: source.to_string() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result_with(dir: &std::path::Path, config: &str) -> String {
        let p = dir.join("r.json");
        std::fs::write(&p, format!("{{\"completed\": 3, \"config\": {config}}}")).unwrap();
        p.to_str().unwrap().to_string()
    }

    #[test]
    fn recorded_values_come_back_as_typed_entries_and_redacted_ones_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = result_with(
            dir.path(),
            r#"{"num-prompts": 3, "request-rate": "inf", "burstiness": 0.5, "sim": true,
                "header": ["Authorization=<redacted>", "X-Trace=1"], "goodput": ["ttft:5"]}"#,
        );
        let (file, redacted) = read(&path).unwrap();
        assert_eq!(redacted, ["header"]);
        let keys: Vec<&str> = file.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["num-prompts", "request-rate", "burstiness", "sim", "goodput"]);
        let tokens = super::super::argv::to_tokens(&super::super::argv::run_command(), &file).unwrap();
        let flat: Vec<String> = tokens.into_iter().flat_map(|(_, t)| t).collect();
        assert_eq!(
            flat,
            ["--num-prompts=3", "--request-rate=inf", "--burstiness=0.5", "--sim", "--goodput=ttft:5"]
        );
    }

    #[test]
    fn a_result_without_a_config_or_not_json_is_sb135() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.json");
        std::fs::write(&p, "{\"completed\": 1}").unwrap();
        assert_eq!(read(p.to_str().unwrap()).unwrap_err().code().as_str(), "SB135");
        std::fs::write(&p, "not json").unwrap();
        assert_eq!(read(p.to_str().unwrap()).unwrap_err().code().as_str(), "SB135");
        assert_eq!(read("/no/such/result.json").unwrap_err().code().as_str(), "SB135");
    }

    #[test]
    fn the_last_document_of_an_appended_result_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.jsonl");
        std::fs::write(&p, "{\"config\": {\"seed\": 1}}\n{\"config\": {\"seed\": 2}}\n").unwrap();
        let (file, _) = read(p.to_str().unwrap()).unwrap();
        assert_eq!(file.entries[0].value.as_integer(), Some(2));
    }

    #[test]
    fn a_rerun_over_its_own_result_is_sb136_unless_appending_or_renamed() {
        let dir = tempfile::tempdir().unwrap();
        let path = result_with(dir.path(), "{}");
        let d = dir.path().to_str().unwrap();
        let args = |extra: &[&str]| -> Vec<String> {
            ["--save-result", &format!("--result-dir={d}"), "--result-filename=r.json"]
                .iter()
                .chain(extra)
                .map(|s| s.to_string())
                .collect()
        };
        assert_eq!(check_not_overwritten(&path, &args(&[])).unwrap_err().code().as_str(), "SB136");
        assert!(check_not_overwritten(&path, &args(&["--append-result"])).is_ok());
        assert!(check_not_overwritten(&path, &args(&["--result-filename", "r2.json"])).is_ok());
    }
}
