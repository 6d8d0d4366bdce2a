//! Where a run's files go: the records file under a provisional name while the run lasts, then
//! beside its result (`<result>.records.jsonl`, one per `--append-result` document), and the
//! shard tag of a sharded run's file names.

use crate::config::{OutputConfig, RunConfig};
use servebench_core::shard::ShardSpec;
use servebench_report::info::vllm_date;
use std::path::{Path, PathBuf};

/// Where results go. The default file name contains the model, which may only be known after
/// the run (auto-detected), so the records file starts under a provisional name and is renamed
/// next to the result at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputPaths {
    /// The records file while the run lasts.
    pub records: PathBuf,
}

/// The provisional records path of a run that saves its result (`None` when nothing is saved).
pub fn output_paths(output: &OutputConfig, run: &RunConfig) -> Option<OutputPaths> {
    if !(output.save_result || output.append_result) || run.dry_run {
        return None;
    }
    let dir = output.result_dir.clone().unwrap_or_default();
    let explicit_result = output.result_filename.as_ref().map(|f| dir.join(f));
    let records = match &explicit_result {
        Some(p) => records_path_for_doc(p, output.append_result),
        None => {
            let name = format!(
                "servebench-{}-{}.records.jsonl",
                vllm_date(super::info::now_local()),
                std::process::id()
            );
            dir.join(shard_file_name(&name, run.shard.as_ref().map(|s| s.spec)))
        }
    };
    Some(OutputPaths { records })
}

fn records_path_for(result: &std::path::Path) -> PathBuf {
    let mut s = result.as_os_str().to_os_string();
    s.push(".records.jsonl");
    PathBuf::from(s)
}

/// The records file of the document about to be written to `result`: `<result>.records.jsonl`,
/// or with `--append-result` onto a file that already holds K documents,
/// `<result>.<K+1>.records.jsonl` — each appended document keeps its own records (and names
/// them in `records_file`), so `report`/`compare` never pair it with another run's.
pub fn records_path_for_doc(result: &std::path::Path, append: bool) -> PathBuf {
    let existing = if append {
        std::fs::read_to_string(result)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0)
    } else {
        0
    };
    if existing == 0 {
        return records_path_for(result);
    }
    let mut s = result.as_os_str().to_os_string();
    s.push(format!(".{}.records.jsonl", existing + 1));
    PathBuf::from(s)
}

/// `records_file` of a result: the records file's name when it sits beside the result, else its
/// path relative to the result's directory (absolute when none can be said). A path as given
/// (`--records o/r.jsonl`) was relative to the directory the run was started in, so `report`
/// and `compare` run from anywhere else missed the records without a word.
pub fn records_file_key(result: &std::path::Path, records: &std::path::Path) -> String {
    let result_dir = result.parent().unwrap_or(std::path::Path::new(""));
    let same_dir = records.parent().unwrap_or(std::path::Path::new("")) == result_dir;
    match records.file_name() {
        Some(name) if same_dir => name.to_string_lossy().into_owned(),
        // Given absolute (`--records /data/r.jsonl`): it stays where it is if the result moves.
        _ if records.is_absolute() => records.display().to_string(),
        _ => relative_to(result_dir, records)
            .or_else(|| std::path::absolute(records).ok())
            .unwrap_or_else(|| records.to_path_buf())
            .display()
            .to_string(),
    }
}

/// `target` relative to the directory `dir` (both read from the current directory), or `None`
/// when that cannot be said without the file system (a `..` in either, no common root).
fn relative_to(dir: &Path, target: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let (dir, target) = (std::path::absolute(dir).ok()?, std::path::absolute(target).ok()?);
    let plain = |p: &Path| p.components().all(|c| !matches!(c, Component::ParentDir | Component::CurDir));
    if !plain(&dir) || !plain(&target) {
        return None;
    }
    let (d, t): (Vec<_>, Vec<_>) = (dir.components().collect(), target.components().collect());
    let common = d.iter().zip(&t).take_while(|(a, b)| a == b).count();
    // Only the root in common: a relative path up to it says no more than the absolute one.
    if common <= 1 {
        return None;
    }
    let mut out: PathBuf = d[common..].iter().map(|_| Component::ParentDir).collect();
    out.extend(&t[common..]);
    Some(out)
}

/// The records file of a result document read from `result_path`, given its `records_file` key:
/// the file it names (beside the result when it is a bare name; every `--append-result`
/// document names its own), else `<result>.records.jsonl`.
pub fn records_beside(result_path: &Path, records_file: Option<&str>) -> PathBuf {
    let result_dir = result_path.parent().unwrap_or(Path::new(""));
    match records_file {
        Some(name) if Path::new(name).is_absolute() => PathBuf::from(name),
        // Relative to the result's directory; results written before that was so named a path
        // relative to the run's working directory (never one that starts with `..`).
        Some(name) if name.contains('/') && !name.starts_with("..") && !result_dir.join(name).exists() => {
            PathBuf::from(name)
        }
        Some(name) => result_dir.join(name),
        None => {
            let mut records = result_path.as_os_str().to_os_string();
            records.push(".records.jsonl");
            PathBuf::from(records)
        }
    }
}

/// `name` with `-shard{I}of{N}` before its extension (`.json`, `.records.jsonl`), so the shards
/// of one run writing to one directory never collide.
pub fn shard_file_name(name: &str, spec: Option<ShardSpec>) -> String {
    let Some(s) = spec else { return name.to_string() };
    let tag = format!("-shard{}of{}", s.index, s.count);
    for ext in [".records.jsonl", ".json"] {
        if let Some(stem) = name.strip_suffix(ext) {
            return format!("{stem}{tag}{ext}");
        }
    }
    format!("{name}{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins `--records o/r.jsonl --result-dir o/run`: the result names its records relative to
    /// its own directory (`../r.jsonl`), so `report`/`compare` find them from any directory; the
    /// path as given was relative to where the run started, and elsewhere the records were
    /// silently missed.
    #[test]
    fn a_records_file_elsewhere_is_named_relative_to_the_result() {
        // As the flags give them: relative to the working directory.
        let result = Path::new("o/run/r.json");
        let key = records_file_key(result, Path::new("o/r.jsonl"));
        assert_eq!(key, "../r.jsonl");
        assert_eq!(records_beside(result, Some(&key)), Path::new("o/run/../r.jsonl"));
        // Beside the result: the bare name. A deeper directory: a relative path down.
        assert_eq!(records_file_key(result, Path::new("o/run/x.jsonl")), "x.jsonl");
        assert_eq!(records_file_key(result, Path::new("o/run/sub/x.jsonl")), "sub/x.jsonl");
        // Given absolute (`--records /data/r.jsonl`): kept absolute, so the result can move.
        assert_eq!(records_file_key(result, Path::new("/data/r.jsonl")), "/data/r.jsonl");
        // A key written by an older run (relative to its working directory) still reads as given
        // when nothing is at that path from the result's directory; a `..` key never does.
        assert_eq!(records_beside(result, Some("elsewhere/r.jsonl")), PathBuf::from("elsewhere/r.jsonl"));
        assert_eq!(records_beside(result, Some("../gone.jsonl")), Path::new("o/run/../gone.jsonl"));
        // On disk: the key found from the result's directory.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("o/run")).unwrap();
        std::fs::write(dir.path().join("o/r.jsonl"), "").unwrap();
        assert!(records_beside(&dir.path().join("o/run/r.json"), Some("../r.jsonl")).exists());
    }

    #[test]
    fn shard_file_names_are_distinct() {
        let s = Some(ShardSpec { index: 1, count: 4 });
        assert_eq!(shard_file_name("a.json", s), "a-shard1of4.json");
        assert_eq!(shard_file_name("x.records.jsonl", s), "x-shard1of4.records.jsonl");
        assert_eq!(shard_file_name("a.json", None), "a.json");
    }
}
