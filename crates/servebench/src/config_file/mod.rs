//! Config files (`--config FILE`) and scenario presets (`--preset NAME`): a file's keys are run
//! flags by long name, turned into command-line tokens that clap checks as it checks flags, so a
//! value in a file is refused exactly as on the command line (errors name file:line:key). The
//! command line wins over `--config`, which wins over `--preset`; several `--config` files merge
//! in order, a later file's key winning (docs/config.md).

pub mod argv;
pub mod flags;
pub mod from_result;
pub mod init;
pub mod parse;
pub mod presets;
pub mod render;
pub mod schema;

use servebench_core::error::BenchError;
use std::collections::BTreeMap;

/// A command line with its config sources spliced in, and where each file value came from.
#[derive(Debug, Clone, Default)]
pub struct Expanded {
    pub args: Vec<String>,
    /// Flag long name → `FILE:LINE` (or `preset NAME@V:LINE`) of the value taken from a file.
    pub origins: BTreeMap<String, String>,
    /// Notes for standard error (recorded flags a rerun cannot take: their values were redacted).
    pub notes: Vec<String>,
}

/// Splices the `--preset`, `--config-from-result` and `--config` values of a run (or of `config
/// show`) into `args` (already `normalize_underscores`d), before the command line's own flags,
/// leaving out keys the command line sets; a later source wins over an earlier one. Without
/// these flags, `args` come back unchanged.
pub fn expand(args: Vec<String>) -> Result<Expanded, BenchError> {
    let start = match (args.get(1).map(String::as_str), args.get(2).map(String::as_str)) {
        (Some("config"), Some("show")) => 3,
        (None, _) => 1,
        (Some(a), _) if a.starts_with('-') => 1,
        _ => return Ok(Expanded { args, ..Expanded::default() }),
    };
    let run = &args[start..];
    let (configs, preset) = (flag_values(run, "--config"), flag_value(run, "--preset"));
    let rerun = flag_value(run, "--config-from-result");
    if configs.is_empty() && preset.is_none() && rerun.is_none() {
        return Ok(Expanded { args, ..Expanded::default() });
    }
    let cmd = argv::run_command();
    let Some(given) = command_line_ids(&cmd, run) else {
        // The command line itself is wrong: let the normal parse report it.
        return Ok(Expanded { args, ..Expanded::default() });
    };
    let mut files = Vec::new();
    let mut notes = Vec::new();
    if let Some(p) = preset {
        let p = presets::find(&p)?;
        files.push(parse::parse(&format!("preset {}", p.id()), p.text)?);
    }
    if let Some(path) = &rerun {
        let (file, redacted) = from_result::read(path)?;
        files.push(file);
        notes.extend(redacted.into_iter().filter(|k| !given.iter().any(|g| flag_is(&cmd, g, k))).map(|k| {
            format!("note: --{k} was recorded redacted in {path}; the rerun goes without it (give it again)")
        }));
    }
    // Several `--config` files merge in order: a key of a later file wins over an earlier one's
    // (the second file used to replace the first whole, silently).
    for path in configs {
        files.push(parse::read(&path)?);
    }
    let mut chosen: BTreeMap<String, (Vec<String>, String)> = BTreeMap::new();
    for file in &files {
        let lines: BTreeMap<&str, usize> = file.entries.iter().map(|e| (e.key.as_str(), e.line)).collect();
        for (key, tokens) in argv::to_tokens(&cmd, file)? {
            let id = argv::find_arg(&cmd, &key).map(|a| a.get_id().to_string()).unwrap_or_default();
            if !given.contains(&id) {
                let at = format!("{}:{}", file.name, lines.get(key.as_str()).copied().unwrap_or(0));
                chosen.insert(key, (tokens, at));
            }
        }
    }
    let mut out: Vec<String> = args[..start].to_vec();
    let mut origins = BTreeMap::new();
    for (key, (tokens, at)) in chosen {
        out.extend(tokens);
        origins.insert(key, at);
    }
    out.extend(run.iter().cloned());
    if let Some(path) = &rerun {
        from_result::check_not_overwritten(path, &out[start..])?;
    }
    Ok(Expanded { args: out, origins, notes })
}

/// Whether the clap id `id` is the flag with long name `long`.
fn flag_is(cmd: &clap::Command, id: &str, long: &str) -> bool {
    argv::find_arg(cmd, long).is_some_and(|a| a.get_id().as_str() == id)
}

/// The value of `--flag V` or `--flag=V` in `run` (the last one).
fn flag_value(run: &[String], flag: &str) -> Option<String> {
    flag_values(run, flag).pop()
}

/// Every value of `--flag V` or `--flag=V` in `run`, in order.
fn flag_values(run: &[String], flag: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut it = run.iter();
    while let Some(a) = it.next() {
        if a == flag {
            found.extend(it.next().cloned());
        } else if let Some(v) = a.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            found.push(v.to_string());
        }
    }
    found
}

/// The ids of the flags the command line gives itself; `None` when it does not parse.
fn command_line_ids(cmd: &clap::Command, run: &[String]) -> Option<Vec<String>> {
    let argv = std::iter::once("servebench".to_string()).chain(run.iter().cloned());
    let m = cmd.clone().try_get_matches_from(argv).ok()?;
    Some(
        cmd.get_arguments()
            .map(|a| a.get_id().to_string())
            .filter(|id| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn without_config_or_preset_args_are_unchanged() {
        let a = argv("servebench --sim --num-prompts 3");
        assert_eq!(expand(a.clone()).unwrap().args, a);
        let a = argv("servebench explain SB130");
        assert_eq!(expand(a.clone()).unwrap().args, a);
    }

    #[test]
    fn the_command_line_wins_over_the_config_which_wins_over_the_preset() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        std::fs::write(&f, "num-prompts = 7\nmax-concurrency = 3\n").unwrap();
        let a = argv(&format!(
            "servebench --preset chat-interactive@1 --config {} --max-concurrency 2",
            f.display()
        ));
        let e = expand(a).unwrap();
        assert!(e.args.contains(&"--num-prompts=7".to_string()), "{:?}", e.args);
        assert!(!e.args.iter().any(|t| t.starts_with("--max-concurrency=")), "{:?}", e.args);
        assert!(e.args.contains(&"--backend=openai-chat".to_string()), "{:?}", e.args);
        assert!(e.origins["num-prompts"].ends_with("c.toml:1"), "{:?}", e.origins);
        assert_eq!(e.origins["backend"], "preset chat-interactive@1:4");
    }

    #[test]
    fn config_show_gets_the_file_too() {
        let e = expand(argv("servebench config show --preset throughput-batch")).unwrap();
        assert_eq!(&e.args[..3], ["servebench", "config", "show"]);
        assert!(e.args.contains(&"--random-output-len=1024".to_string()), "{:?}", e.args);
    }
}
