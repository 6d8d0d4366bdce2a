//! The `random-mm` dataset: random-token text (as `random`) plus synthetic images — uniformly
//! random RGB noise of the configured sizes, encoded as JPEG and sent as
//! `{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,…"}}` parts after the text
//! in the chat message (openai-chat only). The number of items per request is uniform in
//! `[floor(n·(1−r)), min(limit, ceil(n·(1+r)))]` (`--random-mm-base-items-per-request`,
//! `--random-mm-num-mm-items-range-ratio`, the image limit of `--random-mm-limit-mm-per-prompt`;
//! a limit below `floor(n·(1−r))` is refused, as vLLM does, see [`item_range`]); each
//! item's size is a weighted choice among the buckets of `--random-mm-bucket-config`
//! (`{(height, width, frames): probability, …}`). Video buckets (frames > 1) with a non-zero
//! probability are refused: video is not supported yet. `prompt_tokens` counts text tokens only.

use super::{rng, streams};
use crate::random::{generate_random, RandomDatasetConfig};
use base64::Engine;
use rand::{Rng, RngCore};
use rayon::prelude::*;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};
use std::sync::Arc;

/// One size bucket: `(height, width, frames)` with its probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub height: u32,
    pub width: u32,
    pub frames: u32,
    pub probability: f64,
}

/// vLLM's default bucket config.
pub const DEFAULT_BUCKETS: &str = "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5, (720, 1280, 16): 0.0}";
/// vLLM's default per-prompt limits.
pub const DEFAULT_LIMITS: &str = "{'image': 255, 'video': 1}";

/// Options of the random-mm dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomMmConfig {
    /// The text part (lengths, prefix, seed, count) as in `random`.
    pub text: RandomDatasetConfig,
    pub base_items: usize,
    pub items_range_ratio: f64,
    pub limit_image: usize,
    pub limit_video: usize,
    pub buckets: Vec<Bucket>,
}

fn number(s: &str, what: &str) -> std::result::Result<f64, String> {
    s.trim().parse::<f64>().map_err(|_| format!("'{}' is not a number ({what})", s.trim()))
}

/// Parses `{(h, w, f): p, …}` (Python tuple-keyed dict; `[h, w, f]` and quoted keys such as
/// `"(h,w,f)"` are accepted too).
pub fn parse_bucket_config(text: &str) -> std::result::Result<Vec<Bucket>, String> {
    let t = text.trim();
    let inner = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(|| "expected a dict such as {(256, 256, 1): 0.5}".to_string())?;
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let rest_unq = rest.trim_start_matches(['"', '\'']);
        let (open, close) = match rest_unq.chars().next() {
            Some('(') => ('(', ')'),
            Some('[') => ('[', ']'),
            _ => return Err(format!("expected a (height, width, frames) key at '{rest}'")),
        };
        let end = rest_unq.find(close).ok_or_else(|| format!("unclosed '{open}'"))?;
        let parts: Vec<&str> = rest_unq[1..end].split(',').collect();
        if parts.len() != 3 {
            return Err(format!("key '{}' must have 3 numbers (height, width, frames)", &rest_unq[..=end]));
        }
        let dims: Vec<u32> = parts
            .iter()
            .map(|p| p.trim().parse::<u32>().map_err(|_| format!("'{}' is not a positive integer", p.trim())))
            .collect::<std::result::Result<_, _>>()?;
        let after = rest_unq[end + 1..].trim_start_matches(['"', '\'']).trim_start();
        let after = after.strip_prefix(':').ok_or_else(|| "expected ':' after a key".to_string())?;
        let (value, next) = match after.find(',') {
            Some(c) => (&after[..c], &after[c + 1..]),
            None => (after, ""),
        };
        let probability = number(value, "probability")?;
        if !(probability >= 0.0 && probability.is_finite()) {
            return Err(format!("probability {probability} must be >= 0"));
        }
        if dims.contains(&0) {
            return Err("height, width and frames must be at least 1".into());
        }
        // Each image is generated in memory (3 bytes a pixel): a 100,000 × 100,000 bucket asked
        // for 30 GB and the process was killed by the kernel, with no message.
        if dims[0] > MAX_SIDE || dims[1] > MAX_SIDE {
            return Err(format!("{} × {} is larger than {MAX_SIDE} pixels a side", dims[0], dims[1]));
        }
        out.push(Bucket { height: dims[0], width: dims[1], frames: dims[2], probability });
        rest = next.trim();
    }
    if out.is_empty() {
        return Err("no bucket given".into());
    }
    Ok(out)
}

/// The largest image side a bucket may ask for, pixels (an 8K frame is 7,680 wide).
const MAX_SIDE: u32 = 8192;

/// Parses `{'image': N, 'video': M}` (JSON or Python quotes); a missing modality keeps the
/// default (image 255, video 1).
pub fn parse_limits(text: &str) -> std::result::Result<(usize, usize), String> {
    let json = text.replace('\'', "\"");
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&json).map_err(|e| format!("expected {{'image': N, 'video': M}}: {e}"))?;
    let (mut image, mut video) = (255usize, 1usize);
    for (k, v) in map {
        let n = v.as_u64().ok_or_else(|| format!("limit of '{k}' must be a non-negative integer"))? as usize;
        match k.as_str() {
            "image" => image = n,
            "video" => video = n,
            other => return Err(format!("unknown modality '{other}' (image, video)")),
        }
    }
    Ok((image, video))
}

/// Checks buckets: refuses video buckets in use and an all-zero config.
pub fn check_buckets(buckets: &[Bucket]) -> Result<()> {
    if let Some(b) = buckets.iter().find(|b| b.frames > 1 && b.probability > 0.0) {
        return Err(BenchError::FlagNotSupported {
            flag: format!("--random-mm-bucket-config video bucket ({}, {}, {})", b.height, b.width, b.frames),
            hint: " or give video buckets (frames > 1) probability 0.0: only images are generated for now"
                .into(),
        });
    }
    if !buckets.iter().any(|b| b.probability > 0.0) {
        return Err(BenchError::config(
            "--random-mm-bucket-config",
            "every bucket has probability 0",
            "give at least one (height, width, 1) bucket a positive probability",
        ));
    }
    Ok(())
}

/// A JPEG of uniformly random RGB noise, as a chat content part.
pub fn noise_image_part(width: u32, height: u32, r: &mut impl RngCore) -> Result<Arc<str>> {
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    r.fill_bytes(&mut pixels);
    let (w, h) = (
        u16::try_from(width).map_err(|_| too_big(width, height))?,
        u16::try_from(height).map_err(|_| too_big(width, height))?,
    );
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 75)
        .encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| BenchError::dataset_from("JPEG encoding failed", e))?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&jpeg);
    Ok(Arc::from(format!(r#"{{"type":"image_url","image_url":{{"url":"data:image/jpeg;base64,{b64}"}}}}"#)))
}

fn too_big(w: u32, h: u32) -> BenchError {
    BenchError::config(
        "--random-mm-bucket-config",
        format!("image {h}x{w} is larger than JPEG allows (65535)"),
        "use sizes up to 65535",
    )
}

/// Item count bounds `[floor(n(1−r)), ceil(n(1+r))]`.
pub fn item_bounds(n: usize, r: f64) -> (usize, usize) {
    ((n as f64 * (1.0 - r)).floor().max(0.0) as usize, (n as f64 * (1.0 + r)).ceil() as usize)
}

/// The range the number of items of a request is drawn from, uniformly: from
/// `floor(n(1−r))` to `min(image limit, ceil(n(1+r)))`. As vLLM ("Min num mm items is greater
/// than max mm items"), a limit below the smallest count is refused (SB101): the count used to
/// be lowered to the limit silently (`{'image': 0}` sent no image at all). Only images are
/// generated (video buckets in use are refused), so the image limit is the sum of the limits
/// that can be used.
pub fn item_range(cfg: &RandomMmConfig) -> Result<(usize, usize)> {
    let (lo, hi) = item_bounds(cfg.base_items, cfg.items_range_ratio);
    let max = hi.min(cfg.limit_image);
    if lo > max {
        return Err(BenchError::config(
            "--random-mm-limit-mm-per-prompt",
            format!(
                "min num mm items ({lo} = floor({} × (1 − {}))) is greater than max mm items \
                 ({max} = min(image limit {}, ceil({} × (1 + {}))))",
                cfg.base_items, cfg.items_range_ratio, cfg.limit_image, cfg.base_items, cfg.items_range_ratio
            ),
            format!(
                "raise the image limit to at least {lo} (--random-mm-limit-mm-per-prompt \
                 '{{\"image\": {lo}}}'), or lower --random-mm-base-items-per-request"
            ),
        ));
    }
    Ok((lo, max))
}

/// Builds the random-mm workload (every request gets its own image RNG keyed by seed and index).
pub fn generate_random_mm(cfg: &RandomMmConfig, tok: &dyn TextTokenizer) -> Result<Workload> {
    check_buckets(&cfg.buckets)?;
    let images: Vec<Bucket> =
        cfg.buckets.iter().copied().filter(|b| b.frames == 1 && b.probability > 0.0).collect();
    let total_p: f64 = images.iter().map(|b| b.probability).sum();
    let (lo, hi) = item_range(cfg)?;
    let text = generate_random(&cfg.text, tok)?;
    let seed = cfg.text.seed;
    type Parts = Option<Arc<[Arc<str>]>>;
    let parts: Vec<Result<Parts>> = (0..text.requests.len())
        .into_par_iter()
        .map(|i| {
            let mut r = rng(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15), streams::MM_ITEMS);
            let n = r.random_range(lo..=hi);
            let mut items = Vec::with_capacity(n);
            let mut img_rng = rng(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15), streams::IMAGES);
            for _ in 0..n {
                let mut x = r.random::<f64>() * total_p;
                let mut pick = images[images.len() - 1];
                for b in &images {
                    if x < b.probability {
                        pick = *b;
                        break;
                    }
                    x -= b.probability;
                }
                items.push(noise_image_part(pick.width, pick.height, &mut img_rng)?);
            }
            Ok((!items.is_empty()).then(|| Arc::from(items)))
        })
        .collect();
    let mut w = text;
    for (spec, p) in w.requests.iter_mut().zip(parts) {
        spec.multimodal = p?;
    }
    Ok(w)
}
