//! A scripted llama.cpp with 4 slots, each with its own prompt cache (`-np 4`,
//! `kv_unified=false`): requests take the slots in turn, so priming warms slot 0 only; the
//! first request on each other slot misses the shared prefix, every later one hits it. The
//! warning names per-slot caches, not eviction, block size or caching off.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use servebench_testkit::script::{w, Step};
use tokio::sync::Notify;

use crate::llamacpp_queue_e2e::{command, llama_server};
use crate::prefix_cache_llamacpp::{ids, stream};
use crate::support::text;

#[test]
fn per_slot_caches_are_named_in_the_prefix_cache_warning() {
    let slots: Arc<Mutex<Vec<Vec<u64>>>> = Arc::new(Mutex::new(vec![Vec::new(); 4]));
    // The first wave (the 4 measured requests after priming) is answered once all 4 are read.
    let wave: Vec<Arc<Notify>> = (0..4).map(|_| Arc::new(Notify::new())).collect();
    let server = {
        let (slots, wave) = (slots.clone(), wave.clone());
        llama_server(move |k, req| {
            let prompt = ids(req);
            let mut s = slots.lock().unwrap();
            let slot = &mut s[k % 4];
            let cached = slot.iter().zip(&prompt).take_while(|(a, b)| a == b).count();
            *slot = prompt.clone();
            let answer =
                vec![w(stream(prompt.len().max(1), cached.min(prompt.len().saturating_sub(1)))), Step::Close];
            match k {
                1..=4 => {
                    if k == 4 {
                        wave.iter().for_each(|n| n.notify_one());
                    }
                    [vec![Step::Wait(wave[k - 1].clone())], answer].concat()
                }
                _ => answer,
            }
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let out = command(&server, dir.path(), &["--num-prompts", "20", "--max-concurrency", "4"])
        .args(["--prompt-token-ids", "--prefix-cache-hit-rate", "0.7"])
        .args(["--prefix-cache-block-size", "1"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("3 requests sent before any finished missed the whole shared prefix"),
        "{stderr}"
    );
    assert!(!stderr.contains("may have evicted"), "{stderr}");
}
