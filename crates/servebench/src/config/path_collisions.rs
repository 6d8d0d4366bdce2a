//! No output may overwrite an input or another output (SB120): the result, its records file,
//! the `--plot-timeline` and `--plot-dataset-stats` pages beside it, `--records`, `--csv` and
//! `--html-report` are compared with `--dataset-path` (datasets and
//! traces), a `--tokenizer` / `--sim-tokenizer` file and each other, after resolving symbolic
//! links and `.`/`..` — before anything is written.

use crate::cli::RunArgs;
use servebench_core::BenchError;
use servebench_runner::OutputConfig;
use std::path::{Component, Path, PathBuf};

/// The file `p` names, as an absolute path with symbolic links resolved as far as it exists
/// (a file not yet created: its deepest existing directory is resolved, the rest kept).
pub fn identity(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let abs =
        if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) };
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let mut rest = Vec::new();
    let mut base = lexical.clone();
    while !base.as_os_str().is_empty() {
        if let Ok(c) = std::fs::canonicalize(&base) {
            return rest.iter().rev().fold(c, |acc: PathBuf, part: &std::ffi::OsString| acc.join(part));
        }
        match base.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => break,
        }
        base.pop();
    }
    lexical
}

/// `<result>.timeline.html` (`--plot-timeline`): the result path with its extension replaced.
pub fn timeline_path(result_path: &Path) -> PathBuf {
    result_path.with_extension("timeline.html")
}

/// `<result>.dataset_stats.html` (`--plot-dataset-stats`): the result path with its extension
/// replaced.
pub fn dataset_stats_path(result_path: &Path) -> PathBuf {
    result_path.with_extension("dataset_stats.html")
}

/// Inputs of the run that exist as files: (flag, path).
fn inputs(args: &RunArgs) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    if let Some(p) = &args.dataset.dataset_path {
        v.push(("--dataset-path".to_owned(), PathBuf::from(p)));
    }
    // A tokenizer given as a file (model ids and built-in encodings are not files).
    for (flag, t) in [
        ("--tokenizer", args.tokenizer.as_deref()),
        ("--sim-tokenizer", Some(&*args.sim_options.sim_tokenizer)),
    ] {
        if let Some(t) = t.filter(|t| Path::new(t).is_file()) {
            v.push((flag.to_owned(), PathBuf::from(t)));
        }
    }
    v
}

/// Outputs whose names are known before the run: (flag, path). `records` is the records file
/// the run will write (`--records` or the one next to an explicitly named result).
pub(crate) fn outputs(
    args: &RunArgs,
    output: &OutputConfig,
    records: Option<&Path>,
) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    if output.save_result || output.append_result {
        if let Some(result) = output.named_result_path() {
            v.push(("--result-filename".to_owned(), result.clone()));
            if args.experiment.is_experiment() {
                // A sweep also writes its summary table beside the result.
                v.push(("the sweep summary CSV".to_owned(), result.with_extension("csv")));
            }
            if !args.experiment.is_experiment() && records.is_none() {
                let r =
                    servebench_runner::results::paths::records_path_for_doc(&result, output.append_result);
                v.push(("the records file".to_owned(), r));
            }
            // The pages written beside the result (their names follow the result's).
            if output.timeline_itl_ms.is_some() {
                v.push(("--plot-timeline".to_owned(), timeline_path(&result)));
            }
            if args.plot_dataset_stats {
                v.push(("--plot-dataset-stats".to_owned(), dataset_stats_path(&result)));
            }
        }
    }
    if let Some(r) = records {
        v.push(("--records".to_owned(), r.to_path_buf()));
    }
    if let Some(c) = &args.csv {
        v.push(("--csv".to_owned(), c.clone()));
    }
    if let Some(h) = &args.html_report {
        v.push(("--html-report".to_owned(), h.clone()));
    }
    v
}

/// SB120 if an output is the same file as an input or as another output.
pub fn check(args: &RunArgs, output: &OutputConfig, records: Option<&Path>) -> Result<(), BenchError> {
    check_files(&inputs(args), &outputs(args, output, records))
}

/// SB101 when `--append-result` would replace the records of an earlier run: `--records` names
/// a regular file that an earlier run's line of the result file names (this run would write its
/// own records over it). A first run, a records path the result does not name, and a device
/// (`/dev/null`) are let through; without `--records` each appended run gets its own records
/// file.
pub fn check_appended_records(output: &OutputConfig, records: Option<&Path>) -> Result<(), BenchError> {
    let result = output.named_result_path();
    let named_by_earlier_run =
        |r: &&Path| r.is_file() && result.as_deref().is_some_and(|res| result_names_records(res, r));
    match records.filter(|r| output.append_result && named_by_earlier_run(r)) {
        Some(r) => Err(BenchError::config(
            "--records",
            format!(
                "{} exists, and with --append-result this run would replace the records an earlier \
                 run's result points to",
                r.display()
            ),
            "name a new --records file for each appended run, or drop --records (each appended run then \
             gets its own records file beside the result)",
        )),
        None => Ok(()),
    }
}

/// Whether a line of the (appended) result file at `result` names `records` as its
/// `records_file` (the same file, or the same name when either cannot be resolved).
fn result_names_records(result: &Path, records: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(result) else { return false };
    let wanted = identity(records);
    serde_json::Deserializer::from_str(&text)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok)
        .filter_map(|doc| doc.get("records_file").and_then(|v| v.as_str()).map(PathBuf::from))
        .any(|named| identity(&named) == wanted || named.file_name() == records.file_name())
}

/// SB120 if one of `outputs` (named by what writes it: flag, path) is the same file as one of
/// `inputs` or as an output before it; also what `report` and `merge` check before writing.
pub fn check_files(inputs: &[(String, PathBuf)], outputs: &[(String, PathBuf)]) -> Result<(), BenchError> {
    let ins: Vec<_> = inputs.iter().map(|(f, p)| (f, identity(p), p)).collect();
    let outs: Vec<_> = outputs.iter().map(|(f, p)| (f, identity(p), p)).collect();
    for (i, (flag, id, path)) in outs.iter().enumerate() {
        let clash = ins.iter().chain(&outs[..i]).find(|(_, other, _)| other == id);
        if let Some((other_flag, _, other_path)) = clash {
            return Err(BenchError::OutputCollision {
                output_flag: (*flag).clone(),
                output: format!("{flag} {}", path.display()),
                other: format!("{other_flag} {}", other_path.display()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_records_are_refused_only_when_an_earlier_line_of_the_result_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (result, records) = (d.join("r.jsonl"), d.join("rec.jsonl"));
        std::fs::write(&records, "{}\n").unwrap();
        assert!(!result_names_records(&result, &records), "a first run has no result yet");
        std::fs::write(&result, "{\"records_file\":\"other.jsonl\"}\n").unwrap();
        assert!(!result_names_records(&result, &records), "an earlier run's records were elsewhere");
        let named = format!("{{\"x\":1}}\n{{\"records_file\":{:?}}}\n", records.to_str().unwrap());
        std::fs::write(&result, named).unwrap();
        assert!(result_names_records(&result, &records));
        std::fs::write(&result, "{\n  \"records_file\": \"rec.jsonl\"\n}\n").unwrap();
        assert!(result_names_records(&result, &records), "a pretty-printed earlier result names them too");
    }

    #[test]
    fn identity_resolves_dot_segments_and_symlinks_of_files_not_yet_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("data.jsonl"), "{}").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        assert_eq!(identity(&d.join("sub/../data.jsonl")), identity(&d.join("./data.jsonl")));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.join("sub"), d.join("link")).unwrap();
            assert_eq!(identity(&d.join("link/new.json")), identity(&d.join("sub/./new.json")));
            std::os::unix::fs::symlink(d.join("data.jsonl"), d.join("alias.jsonl")).unwrap();
            assert_eq!(identity(&d.join("alias.jsonl")), identity(&d.join("data.jsonl")));
        }
        assert_ne!(identity(&d.join("a.json")), identity(&d.join("b.json")));
    }
}
