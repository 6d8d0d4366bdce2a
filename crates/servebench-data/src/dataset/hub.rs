//! Hugging Face Hub access for datasets: one file of a dataset repo (ShareGPT) through hf-hub
//! and its cache, and rows through the datasets-server API (hf, SPEED-Bench) with a local cache.
//! Offline (`HF_HUB_OFFLINE`) or failed downloads give [`BenchError::DatasetDownload`].

use crate::tokenizer::HubEnv;
use serde_json::Value;
use servebench_core::{BenchError, Result};
use std::path::PathBuf;
use std::time::Duration;

/// The datasets-server API (`HF_DATASETS_SERVER` overrides it, e.g. for a mirror).
pub const DATASETS_SERVER: &str = "https://datasets-server.huggingface.co";

fn download_error(name: &str, detail: impl Into<String>) -> BenchError {
    BenchError::dataset_download(name, detail, None)
}

/// [`download_error`] caused by `err` (an hf-hub, HTTP, I/O or JSON error), kept as its source.
fn download_failed(
    name: &str,
    detail: String,
    err: impl std::error::Error + Send + Sync + 'static,
) -> BenchError {
    BenchError::dataset_download(name, detail, Some(Box::new(err)))
}

/// A file of a Hub dataset repo: from the hub cache, else downloaded (blocking).
pub fn dataset_file(repo: &str, filename: &str, env: &HubEnv) -> Result<PathBuf> {
    let name = format!("{repo}/{filename}");
    if let Some(dir) = &env.cache_dir {
        if let Some(p) = hf_hub::Cache::new(dir.clone()).dataset(repo.to_string()).get(filename) {
            return Ok(p);
        }
    }
    if env.offline {
        return Err(download_error(&name, "not in the hub cache and HF_HUB_OFFLINE is set"));
    }
    let api = env.api().map_err(|e| download_failed(&name, e.to_string(), e))?;
    api.dataset(repo.to_string())
        .get(filename)
        .map_err(|e| download_failed(&name, format!("download failed: {e}"), e))
}

/// Rows of one (config, split) of a Hub dataset, from the datasets-server.
#[derive(Debug, Clone)]
pub struct RowsRequest<'a> {
    pub dataset: &'a str,
    /// None = resolved with `/info` ("default" if present, else the first config).
    pub config: Option<&'a str>,
    /// None = resolved with `/info` (train > test > validation > first).
    pub split: Option<&'a str>,
    /// Rows wanted (download stops there or at the end of the split).
    pub rows: usize,
}

/// Where downloaded rows are cached: `$XDG_CACHE_HOME/servebench/datasets` (or ~/.cache/...).
pub fn rows_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("servebench").join("datasets"))
}

fn server() -> String {
    std::env::var("HF_DATASETS_SERVER")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| DATASETS_SERVER.to_string())
}

fn get_json(url: &str, env: &HubEnv, name: &str) -> Result<Value> {
    let mut last = None;
    for attempt in 0..3u64 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(2 * attempt));
        }
        let mut req = ureq::get(url).timeout(Duration::from_secs(60));
        if let Some(t) = &env.token {
            req = req.set("Authorization", &format!("Bearer {}", t.expose()));
        }
        match req.call() {
            Ok(resp) => {
                let text = resp.into_string().map_err(|e| download_failed(name, e.to_string(), e))?;
                return serde_json::from_str(&text).map_err(|e| {
                    download_failed(name, format!("the datasets-server answered non-JSON: {e}"), e)
                });
            }
            Err(ureq::Error::Status(code @ (401 | 403), _)) => {
                return Err(download_error(
                    name,
                    format!("HTTP {code}: the dataset is gated or private (set HF_TOKEN)"),
                ))
            }
            Err(ureq::Error::Status(code, _)) if (400..500).contains(&code) => {
                return Err(download_error(name, format!("HTTP {code} from {url}")))
            }
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) => download_failed(name, e.to_string(), e),
        None => download_error(name, ""),
    })
}

/// Picks config and split from a datasets-server `/info` answer.
pub fn pick_config_split(
    info: &Value,
    config: Option<&str>,
    split: Option<&str>,
) -> Option<(String, String)> {
    let configs = info.get("dataset_info")?.as_object()?;
    let config = match config {
        Some(c) => c.to_string(),
        None if configs.contains_key("default") => "default".to_string(),
        None => configs.keys().next()?.clone(),
    };
    let splits = configs.get(&config)?.get("splits")?.as_object()?;
    let split = match split {
        Some(s) if splits.contains_key(s) => s.to_string(),
        Some(_) => return None,
        None => ["train", "test", "validation"]
            .iter()
            .find(|s| splits.contains_key(**s))
            .map(|s| s.to_string())
            .or_else(|| splits.keys().next().cloned())?,
    };
    Some((config, split))
}

/// Downloads (or reads from the cache) up to `req.rows` rows. The cache file records how many
/// rows the split has, so a later run that wants more rows downloads again instead of silently
/// reusing a smaller cached subset.
pub fn fetch_rows(req: &RowsRequest<'_>, env: &HubEnv) -> Result<Vec<Value>> {
    let name = req.dataset;
    let base = server();
    let (config, split) = match (req.config, req.split) {
        (Some(c), Some(s)) => (c.to_string(), s.to_string()),
        _ => {
            if env.offline {
                return Err(download_error(
                    name,
                    "HF_HUB_OFFLINE is set; pass --hf-subset and --hf-split to use the cache",
                ));
            }
            let info = get_json(&format!("{base}/info?dataset={}", enc(name)), env, name)?;
            pick_config_split(&info, req.config, req.split).ok_or_else(|| {
                download_error(name, "the requested --hf-subset/--hf-split does not exist on the Hub")
            })?
        }
    };
    let cache =
        rows_cache_dir().map(|d| d.join(format!("hf-{}-{}-{}.json", name.replace('/', "--"), config, split)));
    if let Some(p) = &cache {
        if let Ok(text) = std::fs::read_to_string(p) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                let rows = v.get("rows").and_then(Value::as_array).cloned().unwrap_or_default();
                let total = v.get("num_rows_total").and_then(Value::as_u64).unwrap_or(0) as usize;
                if !rows.is_empty() && (rows.len() >= req.rows || rows.len() >= total) {
                    return Ok(rows);
                }
            }
        }
    }
    if env.offline {
        return Err(download_error(name, "not cached and HF_HUB_OFFLINE is set"));
    }
    let mut rows = Vec::new();
    let mut total = usize::MAX;
    while rows.len() < req.rows && rows.len() < total {
        let url = format!(
            "{base}/rows?dataset={}&config={}&split={}&offset={}&length=100",
            enc(name),
            enc(&config),
            enc(&split),
            rows.len()
        );
        let page = get_json(&url, env, name)?;
        total = page.get("num_rows_total").and_then(Value::as_u64).map_or(total, |t| t as usize);
        let got: Vec<Value> = page
            .get("rows")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|r| r.get("row").cloned()).collect())
            .unwrap_or_default();
        if got.is_empty() {
            break;
        }
        rows.extend(got);
    }
    if rows.is_empty() {
        return Err(download_error(name, format!("the split {config}/{split} has no rows")));
    }
    if let Some(p) = &cache {
        if let Some(dir) = p.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let doc = serde_json::json!({"num_rows_total": total.min(usize::MAX / 2), "rows": rows});
        let _ = std::fs::write(p, doc.to_string());
    }
    Ok(rows)
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    url_encode(s)
}

fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_testkit::script::{response, serve_in_background, ScriptedServer, Step};

    #[test]
    fn config_and_split_resolution_follows_vllm() {
        let info = serde_json::json!({"dataset_info": {
            "zeta": {"splits": {"validation": {}, "test": {}}},
            "default": {"splits": {"validation": {}, "test": {}, "extra": {}}}
        }});
        assert_eq!(pick_config_split(&info, None, None), Some(("default".into(), "test".into())));
        assert_eq!(
            pick_config_split(&info, Some("zeta"), Some("validation")),
            Some(("zeta".into(), "validation".into()))
        );
        assert_eq!(pick_config_split(&info, Some("zeta"), Some("train")), None);
        assert_eq!(pick_config_split(&info, Some("nope"), None), None);
    }

    #[test]
    fn offline_download_is_a_coded_error() {
        let dir = tempfile::tempdir().unwrap();
        let env = HubEnv { cache_dir: Some(dir.path().to_path_buf()), offline: true, ..HubEnv::default() };
        let err = dataset_file("org/data", "file.json", &env).unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::DatasetDownload);
        assert!(err.to_string().contains("--dataset-path"), "{err}");
    }

    /// One `/rows` page (100 rows from `offset`) of a 250-row split, as a script step.
    fn rows_page(offset: usize) -> Vec<Step> {
        let rows: Vec<Value> = (offset..(offset + 100).min(250))
            .map(|i| serde_json::json!({"row_idx": i, "row": {"prompt": format!("row {i}")}}))
            .collect();
        let body = serde_json::json!({"rows": rows, "num_rows_total": 250}).to_string();
        vec![Step::Read, response(200, "OK", "application/json", body.as_bytes()), Step::Close]
    }

    /// The `offset=` of each request the server read.
    fn offsets(server: &ScriptedServer) -> Vec<usize> {
        let offset = |r: &String| r.split(['&', ' ']).find_map(|p| p.strip_prefix("offset="))?.parse().ok();
        server.requests().iter().filter_map(offset).collect()
    }

    #[test]
    fn whole_split_fetches_every_page_and_the_default_only_what_is_needed() {
        // The default run reads the first page; --no-stream reads all three, then the cache.
        let server = serve_in_background([0, 0, 100, 200].map(rows_page).to_vec());
        let url = server.base_url();
        let cache = tempfile::tempdir().unwrap();
        // Process-wide: only this test sets them (the others never reach the network).
        std::env::set_var("HF_DATASETS_SERVER", &url);
        std::env::set_var("XDG_CACHE_HOME", cache.path());
        let env = HubEnv::default();
        let req = RowsRequest { dataset: "org/data", config: Some("default"), split: Some("train"), rows: 5 };
        let rows = fetch_rows(&req, &env).unwrap();
        assert_eq!((rows.len(), offsets(&server)), (100, vec![0]));
        // --no-stream: the whole split (3 pages), cached for the next run.
        let whole = RowsRequest { rows: usize::MAX, ..req.clone() };
        let rows = fetch_rows(&whole, &env).unwrap();
        assert_eq!(rows.len(), 250);
        assert_eq!(rows[249]["prompt"], "row 249");
        assert_eq!(offsets(&server), [0, 0, 100, 200]);
        assert_eq!(fetch_rows(&whole, &env).unwrap().len(), 250);
        assert_eq!(server.connections(), 4, "served from the cache");
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(url_encode("org/name x"), "org%2Fname%20x");
    }
}
