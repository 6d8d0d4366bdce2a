//! The records files of a sharded run, for `servebench merge` (docs/scale-out.md): finding them
//! in directories, waiting for every shard to finish, reading one shard, and writing the merged
//! records file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use servebench_core::merge::{MergedRun, ShardInput};
use servebench_core::shard::ShardHeader;
use servebench_core::BenchError;

use super::sink::read_records_file;

/// The records files named by `inputs`: files as given, directories expanded to their
/// `*.records.jsonl` files that start with a shard header (sorted by name).
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, BenchError> {
    let mut out = Vec::new();
    for p in inputs {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        out.extend(shard_files_in(p)?.0);
    }
    Ok(out)
}

/// The files of `inputs`' directories left out as earlier merges: a merge's records file beside
/// a shard of the same workload.
pub fn earlier_merges(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, BenchError> {
    let mut out = Vec::new();
    for p in inputs.iter().filter(|p| p.is_dir()) {
        out.extend(shard_files_in(p)?.1);
    }
    Ok(out)
}

/// The shard records files in `dir` (sorted by name), and those left out: a merge's records file
/// (its header's `merged_from`) beside a shard of the same workload is an earlier `merge
/// --save-result` of that set (the default result directory is the working directory), not
/// one of its shards.
fn shard_files_in(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), BenchError> {
    use servebench_core::shard::{parse_shard_line, ShardLine};
    let mut found: Vec<(PathBuf, Option<ShardHeader>)> = std::fs::read_dir(dir)
        .map_err(|e| BenchError::io(dir.display(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.is_file() && f.to_string_lossy().ends_with(".records.jsonl"))
        .filter_map(|f| {
            let line = first_line(&f).filter(|l| servebench_core::shard::is_shard_line(l))?;
            let header = match parse_shard_line(&line) {
                Some(ShardLine::Header(h)) => Some(h),
                _ => None,
            };
            Some((f, header))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let shards: Vec<&str> = found
        .iter()
        .filter_map(|(_, h)| {
            h.as_ref().filter(|h| h.merged_from.is_none()).map(|h| h.workload_fingerprint.as_str())
        })
        .collect();
    let is_earlier_merge = |h: &Option<ShardHeader>| {
        h.as_ref()
            .is_some_and(|h| h.merged_from.is_some() && shards.contains(&h.workload_fingerprint.as_str()))
    };
    let (left_out, kept): (Vec<_>, Vec<_>) = found.iter().partition(|(_, h)| is_earlier_merge(h));
    let paths = |v: Vec<&(PathBuf, Option<ShardHeader>)>| v.into_iter().map(|(p, _)| p.clone()).collect();
    Ok((paths(kept), paths(left_out)))
}

fn first_line(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    std::io::BufReader::new(f).lines().next()?.ok()
}

/// Expands `inputs` until every shard's file has its summary line, or `wait` has passed;
/// `waiting(finished, expected)` is called before each 5 s pause.
pub fn wait_for_shards(
    inputs: &[PathBuf],
    wait: Duration,
    waiting: &mut dyn FnMut(usize, Option<usize>),
) -> Result<Vec<PathBuf>, BenchError> {
    // A wait beyond what the clock holds has no deadline.
    let deadline = Instant::now().checked_add(wait);
    loop {
        let files = expand_inputs(inputs)?;
        if wait.is_zero() {
            return Ok(files);
        }
        let (finished, expected) = progress(&files);
        if expected.is_some_and(|n| finished >= n) {
            // A shard renames its records file next to its result just after writing the
            // summary: let that settle, then list the files again.
            std::thread::sleep(Duration::from_secs(2));
            return expand_inputs(inputs);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(files);
        }
        waiting(finished, expected);
        let left = deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(Instant::now()));
        std::thread::sleep(Duration::from_secs(5).min(left));
    }
}

/// Shards finished (their summary line written) and shards expected (from a header).
fn progress(files: &[PathBuf]) -> (usize, Option<usize>) {
    let mut expected = None;
    let mut finished = 0;
    for f in files {
        if let Ok(file) = read_records_file(f) {
            expected = expected.or(file.shard_header.map(|h| h.num_shards as usize));
            finished += usize::from(file.shard_summary.is_some());
        }
    }
    (finished, expected)
}

/// Reads one shard's records file; one without a shard header is refused (SB702).
/// `truncated` is called first when a truncated last line was ignored (the shard was stopped?).
pub fn read_shard(path: &Path, truncated: &mut dyn FnMut()) -> Result<ShardInput, BenchError> {
    let file = read_records_file(path)?;
    if file.truncated > 0 {
        truncated();
    }
    let header = file.shard_header.ok_or_else(|| BenchError::ShardSet {
        detail: format!(
            "{}: no shard header: this records file was not written by a run with --num-shards",
            path.display()
        ),
    })?;
    Ok(ShardInput {
        source: path.display().to_string(),
        header,
        summary: file.shard_summary,
        records: file.records,
    })
}

/// The merged records file: a header of a 1-shard run anchored at the merged origin (so it can
/// be reported or merged again), then every record.
pub fn write_merged_records(path: &Path, merged: &MergedRun) -> Result<(), BenchError> {
    let header = ShardHeader {
        shard_index: 0,
        num_shards: 1,
        shard_requests: merged.records.len() as u64,
        wall_anchor_unix_us: merged.origin_unix_us,
        waited_us: None,
        // A merge of a merge keeps the count of the shards the run had.
        merged_from: Some(merged.header.merged_from.unwrap_or(merged.header.num_shards)),
        ..merged.header.clone()
    };
    let mut text = header.to_line();
    text.push('\n');
    for r in &merged.records {
        text.push_str(&serde_json::to_string(r).map_err(|e| BenchError::io(path.display(), e))?);
        text.push('\n');
    }
    // The merged run's end and health: read back, it did not end "abnormally" as a shard
    // without its summary line would have.
    text.push_str(&merged.summary().to_line());
    text.push('\n');
    std::fs::write(path, text).map_err(|e| BenchError::io(path.display(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::merged::merged_run_info;
    use serde_json::Value;
    use servebench_core::merge::merge_shards;
    use servebench_core::shard::{ShardRunInfo, ShardSummary, FORMAT_VERSION};
    use servebench_report::sections::shards::{shard_entries, shard_table};
    use servebench_testkit::records::RecordBuilder;

    fn read(path: &Path) -> Result<ShardInput, BenchError> {
        read_shard(path, &mut || {})
    }

    fn write_shard(dir: &Path, index: u32, count: u32, total: u64, summary: bool) -> PathBuf {
        let header = ShardHeader {
            version: FORMAT_VERSION,
            servebench_version: "t".into(),
            shard_index: index,
            num_shards: count,
            workload_fingerprint: "ab".into(),
            seed: 0,
            total_requests: total,
            shard_requests: (u64::from(index)..total).step_by(count as usize).count() as u64,
            wall_anchor_unix_us: 1_000_000 + u64::from(index),
            start_at_unix_us: Some(1_000_000),
            waited_us: Some(5),
            merged_from: None,
            run: ShardRunInfo {
                model_id: "m".into(),
                backend: "openai".into(),
                burstiness: 1.0,
                ..Default::default()
            },
        };
        let mut text = header.to_line() + "\n";
        for i in (u64::from(index)..total).step_by(count as usize) {
            let r = RecordBuilder::new(i)
                .intended_at(i * 100)
                .prompt_tokens(8)
                .sent_at(i * 100 + 1)
                .stream(i * 100 + 50, &[10])
                .done_at(i * 100 + 61)
                .with(|r| r.expected_output_tokens = 2)
                .completed();
            text += &(serde_json::to_string(&r).unwrap() + "\n");
        }
        if summary {
            text += &(ShardSummary { shard_index: index, records: 3, ..Default::default() }.to_line() + "\n");
        }
        let path = dir.join(format!("run-shard{index}of{count}.json.records.jsonl"));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn directories_expand_to_their_shard_records_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_shard(dir.path(), 0, 2, 6, true);
        let b = write_shard(dir.path(), 1, 2, 6, false);
        std::fs::write(dir.path().join("plain.records.jsonl"), "{\"index\":0}\n").unwrap();
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        assert_eq!(expand_inputs(&[dir.path().to_path_buf()]).unwrap(), vec![a.clone(), b.clone()]);
        // Not every shard finished: the wait ends at its deadline with what is there.
        let t = std::time::Instant::now();
        let files =
            wait_for_shards(&[dir.path().to_path_buf()], Duration::from_millis(300), &mut |_, _| {}).unwrap();
        assert_eq!(files.len(), 2);
        assert!(t.elapsed() >= Duration::from_millis(300));

        let inputs: Vec<ShardInput> = files.iter().map(|p| read(p).unwrap()).collect();
        let merged = merge_shards(inputs, false).unwrap();
        assert_eq!(merged.records.len(), 6);
        let table = shard_table(&merged);
        assert!(table.contains("Shards: 2 of 2 merged (fingerprint ab…, seed 0)"), "{table}");
        assert!(table.contains("all anchored on --start-at"), "{table}");
        let info = merged_run_info(&merged);
        assert_eq!(info.num_prompts, 6);
        assert_eq!(info.request_rate, f64::INFINITY);
        let shards = serde_json::to_value(shard_entries(&merged)).unwrap();
        assert_eq!(shards[1]["origin_offset_us"], 1);
        assert_eq!(shards[1]["client_health"], Value::Null);

        let out = dir.path().join("merged.records.jsonl");
        write_merged_records(&out, &merged).unwrap();
        let again = read(&out).unwrap();
        assert_eq!((again.header.shard_index, again.header.num_shards), (0, 1));
        assert_eq!(again.header.merged_from, Some(2));
        assert_eq!(again.records, merged.records);
        // Pins the merge's records file ending with its summary line: merged again it is a run
        // that ended as the merge did, not a shard cut off ("no summary line", interrupted).
        let summary = again.summary.clone().expect("a summary line");
        assert_eq!((summary.records, summary.interrupted), (6, merged.interrupted()));
        let remerged = merge_shards(vec![again], false).unwrap();
        assert_eq!(remerged.interrupted(), merged.interrupted());
        let out2 = dir.path().join("merged2.json.records.jsonl");
        write_merged_records(&out2, &remerged).unwrap();
        assert_eq!(read(&out2).unwrap().header.merged_from, Some(2), "the run's shards, not 1");
        std::fs::remove_file(&out2).unwrap();
        assert!(remerged.warnings.iter().all(|w| !w.contains("no summary line")), "{:?}", remerged.warnings);
        assert!(read(&dir.path().join("plain.records.jsonl")).is_err());
        // Pins a second `merge DIR` beside an earlier merge's records file (one shard, the same
        // workload): it is left out, not read as a shard of another set (SB701 "--num-shards
        // differs").
        let dir_input = [dir.path().to_path_buf()];
        assert_eq!(expand_inputs(&dir_input).unwrap(), vec![a, b]);
        assert_eq!(earlier_merges(&dir_input).unwrap(), vec![out.clone()]);
        // Alone, or given by name, a one-shard file is merged as ever.
        assert_eq!(expand_inputs(std::slice::from_ref(&out)).unwrap(), vec![out.clone()]);
        let alone = tempfile::tempdir().unwrap();
        std::fs::copy(&out, alone.path().join("m.records.jsonl")).unwrap();
        assert_eq!(expand_inputs(&[alone.path().to_path_buf()]).unwrap().len(), 1);
        // A one-shard set and its merge: the merge is left out (both headers say one shard).
        let single = tempfile::tempdir().unwrap();
        let s0 = write_shard(single.path(), 0, 1, 3, true);
        let m = merge_shards(vec![read(&s0).unwrap()], false).unwrap();
        let m_out = single.path().join("m.json.records.jsonl");
        write_merged_records(&m_out, &m).unwrap();
        let single_dir = [single.path().to_path_buf()];
        assert_eq!(expand_inputs(&single_dir).unwrap(), vec![s0.clone()]);
        assert_eq!(earlier_merges(&single_dir).unwrap(), vec![m_out]);
        // A genuine one-shard run beside a set of several shards is not a merge: kept.
        std::fs::copy(&s0, dir.path().join("solo.records.jsonl")).unwrap();
        assert!(expand_inputs(&dir_input).unwrap().contains(&dir.path().join("solo.records.jsonl")));
    }
}
