//! Every output of a run can be written, checked before the first request: the directories of
//! `--result-dir`, `--records`, `--csv`, `--html-report` and a named result are created (as vLLM
//! creates `--result-dir`), and each file (or, for a result whose name is only known after the
//! run, its directory) is tried for writing. A failure is SB101 naming the flag, before
//! anything is sent — never a finished run that cannot keep its result.

use crate::cli::RunArgs;
use servebench_core::BenchError;
use servebench_runner::OutputConfig;
use std::fs::OpenOptions;
use std::path::Path;

/// Creates the output directories of the run and checks that each output can be written.
pub fn prepare(args: &RunArgs, output: &OutputConfig, records: Option<&Path>) -> Result<(), BenchError> {
    if args.dry_run {
        return Ok(()); // a dry run writes nothing
    }
    if output.save_result || output.append_result {
        let dir = output.result_dir.clone().unwrap_or_default();
        let flag = if output.result_dir.is_some() { "--result-dir" } else { "--save-result" };
        writable_dir(flag, &dir)?;
    }
    for (flag, path) in super::path_collisions::outputs(args, output, records) {
        writable_file(&flag, &path)?;
    }
    Ok(())
}

/// `dir` exists (created if missing) and a file can be created in it.
fn writable_dir(flag: &str, dir: &Path) -> Result<(), BenchError> {
    let shown = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let refuse = |problem: String| {
        BenchError::config(flag, problem, "choose a directory this user can write, or create it first")
    };
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(dir)
            .map_err(|e| refuse(format!("cannot create directory {}: {e}", shown.display())))?;
    }
    let probe = dir.join(format!(".servebench-write-check-{}", std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(refuse(format!("cannot write in directory {}: {e}", shown.display()))),
    }
}

/// `path` can be written: an existing file is opened for appending (not changed), a new one's
/// directory is created and written in.
fn writable_file(flag: &str, path: &Path) -> Result<(), BenchError> {
    if path.is_dir() {
        return Err(BenchError::config(
            flag,
            format!("{} is a directory", path.display()),
            "name a file (the directory goes in the path)",
        ));
    }
    if path.exists() {
        return OpenOptions::new().append(true).open(path).map(|_| ()).map_err(|e| {
            BenchError::config(
                flag,
                format!("cannot write {}: {e}", path.display()),
                "choose a file this user can write",
            )
        });
    }
    let dir = path.parent().unwrap_or(Path::new(""));
    writable_dir(flag, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_directories_are_created_and_unwritable_paths_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let nested = tmp.path().join("a/b");
        writable_dir("--result-dir", &nested).unwrap();
        assert!(nested.is_dir());
        assert_eq!(std::fs::read_dir(&nested).unwrap().count(), 0, "the probe file is removed");
        writable_file("--records", &tmp.path().join("c/rec.jsonl")).unwrap();
        assert!(tmp.path().join("c").is_dir());
        let file = tmp.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        writable_file("--csv", &file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x", "an existing file is not changed");
        let e = writable_dir("--result-dir", &file.join("under")).unwrap_err();
        assert!(e.to_string().contains("invalid --result-dir: cannot create directory"), "{e}");
        let e = writable_file("--html-report", tmp.path()).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }
}
