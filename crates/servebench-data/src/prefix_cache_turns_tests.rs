use std::collections::HashSet;

use super::*;
use crate::prefix_cache::tests::{cfg, ids};
use servebench_core::ErrorCode;

/// `turns` per conversation, first turn `first` new ids, later ones `later`, replies `out`;
/// every id distinct (as the random dataset's are, with overwhelming odds).
fn conversations(n: usize, turns: usize, first: u32, later: u32, out: u32) -> TokenConversations {
    let mut next = 1000u32;
    let mut ids = |len: u32| -> Vec<u32> {
        let v = (next..next + len).collect();
        next += len;
        v
    };
    let convs = (0..n)
        .map(|_| {
            (0..turns)
                .map(|t| TokenTurn { ids: ids(if t == 0 { first } else { later }), output_tokens: out })
                .collect()
        })
        .collect();
    grow(convs, 7)
}

/// A server's prefix cache of `block`-token blocks that forgets nothing (the hashes chain: a
/// block is keyed by the whole prompt up to its end): primes `warmup`, then sends each
/// conversation's turns in order and returns the tokens each request found cached.
fn served(w: &Workload, bounds: &[(usize, usize)], warmup: &[Arc<[u32]>], block: usize) -> Vec<u32> {
    served_on(&mut HashSet::new(), w, bounds, warmup, block)
}

/// As [`served`], on a server whose cache already holds `cache` (an earlier run's blocks).
fn served_on(
    cache: &mut HashSet<Vec<u32>>,
    w: &Workload,
    bounds: &[(usize, usize)],
    warmup: &[Arc<[u32]>],
    block: usize,
) -> Vec<u32> {
    let send = |p: &[u32], cache: &mut HashSet<Vec<u32>>| -> u32 {
        let full = p.len() / block;
        let hit = (1..=full).take_while(|&b| cache.contains(&p[..b * block])).count() * block;
        (1..=full).for_each(|b| {
            cache.insert(p[..b * block].to_vec());
        });
        hit.min(p.len() - 1) as u32
    };
    warmup.iter().for_each(|p| {
        send(p, cache);
    });
    let mut seen = vec![0; w.len()];
    // Conversations interleaved turn by turn, as concurrent sessions are.
    let most = bounds.iter().map(|b| b.1).max().unwrap_or(0);
    for t in 0..most {
        for &(start, _) in bounds.iter().filter(|b| b.1 > t) {
            seen[start + t] = send(&ids(w, start + t), cache);
        }
    }
    seen
}

#[test]
fn each_turn_is_the_conversation_so_far_with_a_stand_in_reply() {
    let c = conversations(1, 3, 20, 10, 5);
    let lens: Vec<u32> = c.workload.requests.iter().map(|r| r.prompt_tokens).collect();
    assert_eq!(lens, vec![20, 35, 50]);
    assert_eq!(c.bounds, vec![(0, 3)]);
    let (t0, t1, t2) = (ids(&c.workload, 0), ids(&c.workload, 1), ids(&c.workload, 2));
    assert_eq!(&t1[..20], &t0[..]);
    assert_eq!(&t2[..35], &t1[..]);
    assert_eq!(&t1[25..], &(1020..1030).collect::<Vec<_>>()[..], "the new ids after the reply");
    assert_eq!(c.workload.requests[1].expected_output_tokens, 5);
    // H = floor(L_{t−1} / 16) · 16.
    assert_eq!(history_prefix(&c.workload, &c.bounds, 16), vec![0, 16, 32]);
    // Seeded: the same conversations again.
    assert_eq!(ids(&conversations(1, 3, 20, 10, 5).workload, 2), t2);
}

#[test]
fn spread_is_as_even_as_the_caps_allow() {
    assert_eq!(spread(5, &[1, 3, 3]), vec![1, 2, 2]);
    assert_eq!(spread(6, &[1, 3, 3]), vec![1, 3, 2]);
    assert_eq!(spread(0, &[4, 4]), vec![0, 0]);
    assert_eq!(spread(8, &[4, 4]), vec![4, 4]);
}

/// Two conversations of 3 turns: 64 new ids, then 32, replies of 16. L = 64, 112, 160 (336 per
/// conversation, 672 in all); H = 0, 64, 112 (176, 352 in all); a first turn shares at most
/// floor(63 / 16) · 16 = 48. Reachable: [352, 448] / 672 = [0.5238, 0.6667].
#[test]
fn hit_rate_target_sets_the_first_turns_shared_prefix_exactly() {
    let mut c = conversations(2, 3, 64, 32, 16);
    let l = apply(cfg(PrefixCacheMode::HitRate(0.6)), &mut c.workload, &c.bounds).unwrap();
    // (0.6 · 672 − 352) / 16 = 3.2 → 3 blocks: 2 to the first conversation, 1 to the second.
    assert_eq!(l.cached_prefix, vec![32, 64, 112, 16, 64, 112]);
    assert_eq!(l.constructed_hit_rate(&c.workload), Some(400.0 / 672.0));
    let t = l.turns.unwrap();
    assert_eq!((t.history_hit_rate, t.max_hit_rate, t.target), (352.0 / 672.0, 448.0 / 672.0, 0.6));
    assert_eq!(l.target(), 0.6);
    assert_eq!((l.warmup.len(), l.warmup[0].len()), (1, 32));
    // Every turn of a conversation starts with its shared prefix, and still with its previous turn.
    for i in 0..3 {
        assert_eq!(&ids(&c.workload, i)[..32], &l.warmup[0][..]);
        assert_eq!(&ids(&c.workload, 3 + i)[..16], &l.warmup[0][..16]);
    }
    assert_ne!(ids(&c.workload, 3)[16], l.warmup[0][16], "the second shares one block only");
    assert_eq!(&ids(&c.workload, 2)[..112], &ids(&c.workload, 1)[..]);
    // What a prefix cache finds is exactly what was built in.
    assert_eq!(served(&c.workload, &c.bounds, &l.warmup, 16), l.cached_prefix);
}

#[test]
fn the_ends_of_the_range_are_reachable_and_beyond_them_is_sb211() {
    for (r, built) in [(352.0 / 672.0, 352.0 / 672.0), (448.0 / 672.0, 448.0 / 672.0)] {
        let mut c = conversations(2, 3, 64, 32, 16);
        let l = apply(cfg(PrefixCacheMode::HitRate(r)), &mut c.workload, &c.bounds).unwrap();
        assert_eq!(l.constructed_hit_rate(&c.workload), Some(built));
        assert_eq!(served(&c.workload, &c.bounds, &l.warmup, 16), l.cached_prefix);
    }
    for r in [0.5, 0.7, 0.0] {
        let mut c = conversations(2, 3, 64, 32, 16);
        let e = apply(cfg(PrefixCacheMode::HitRate(r)), &mut c.workload, &c.bounds).unwrap_err();
        assert_eq!(e.code(), ErrorCode::PrefixCacheTargetUnreachable);
        let text = e.to_string();
        assert!(text.contains("from 0.5238 (their history alone) to 0.6667"), "{text}");
        assert!(text.contains("fix: pass a target in [0.5238, 0.6667]"), "{text}");
    }
    // One turn per conversation: no history, so 0 is reachable.
    let mut c = conversations(3, 1, 64, 32, 16);
    let l = apply(cfg(PrefixCacheMode::HitRate(0.0)), &mut c.workload, &c.bounds).unwrap();
    assert_eq!(l.constructed_hit_rate(&c.workload), Some(0.0));
    assert!(l.warmup.is_empty());
}

#[test]
fn bimodal_warms_a_share_of_the_conversations() {
    let mut c = conversations(4, 3, 64, 32, 16);
    let mode = PrefixCacheMode::Bimodal { fraction: 0.5, ratio: 0.5 };
    let l = apply(cfg(mode), &mut c.workload, &c.bounds).unwrap();
    // Conversations 1 and 3 are warm: floor(0.5 · 64 / 16) · 16 = 32.
    let firsts: Vec<u32> = c.bounds.iter().map(|b| l.cached_prefix[b.0]).collect();
    assert_eq!(firsts, vec![0, 32, 0, 32]);
    // (4 · 176 + 2 · 32) / (4 · 336); the rule before rounding asks for the same here.
    assert_eq!(l.constructed_hit_rate(&c.workload), Some(768.0 / 1344.0));
    assert_eq!(l.target(), 768.0 / 1344.0);
    assert_eq!(served(&c.workload, &c.bounds, &l.warmup, 16), l.cached_prefix);
}

#[test]
fn bust_leaves_every_turn_nothing_to_reuse() {
    let mut c = conversations(2, 3, 64, 32, 16);
    let plain = c.workload.clone();
    let l = apply(cfg(PrefixCacheMode::Bust), &mut c.workload, &c.bounds).unwrap();
    assert!(l.warmup.is_empty());
    assert_eq!(l.cached_prefix, vec![0; 6]);
    assert_eq!(l.constructed_hit_rate(&c.workload), Some(0.0));
    assert_eq!(l.target(), 0.0);
    // The history is still sent whole: only the first block of each turn differs.
    assert_eq!(&ids(&c.workload, 1)[16..], &ids(&plain, 1)[16..]);
    assert_ne!(&ids(&c.workload, 1)[..16], &ids(&c.workload, 0)[..16]);
    assert_eq!(served(&c.workload, &c.bounds, &l.warmup, 16), vec![0; 6]);
    // Another run, other first blocks.
    let mut again = conversations(2, 3, 64, 32, 16);
    let other = PrefixCacheConfig { nonce: 100, ..cfg(PrefixCacheMode::Bust) };
    apply(other, &mut again.workload, &again.bounds).unwrap();
    assert_ne!(&ids(&c.workload, 0)[..16], &ids(&again.workload, 0)[..16]);
}

#[test]
fn uneven_conversations_stay_exact() {
    // Different turn counts and a first turn shorter than a block (cap 0).
    let mut next = 5000u32;
    let mut turn = |len: u32, out: u32| {
        let ids = (next..next + len).collect();
        next += len;
        TokenTurn { ids, output_tokens: out }
    };
    let convs = vec![
        vec![turn(100, 7), turn(9, 30), turn(50, 3), turn(17, 1)],
        vec![turn(10, 40)],
        vec![turn(33, 16), turn(16, 16)],
    ];
    let mut c = grow(convs, 3);
    let l = apply(cfg(PrefixCacheMode::HitRate(0.65)), &mut c.workload, &c.bounds).unwrap();
    assert_eq!(served(&c.workload, &c.bounds, &l.warmup, 16), l.cached_prefix);
    assert_eq!(l.cached_prefix[c.bounds[1].0], 0, "a 10-token first turn shares no block");
    let t = l.turns.unwrap();
    let built = l.constructed_hit_rate(&c.workload).unwrap();
    assert!(t.history_hit_rate <= built && built <= t.max_hit_rate);
    let total: u64 = c.workload.requests.iter().map(|r| u64::from(r.prompt_tokens)).sum();
    assert!((built - 0.65).abs() <= 8.0 / total as f64, "within half a block of the target: {built}");
}

#[test]
fn text_prompts_and_shared_prefix_mode_are_sb210() {
    let mut c = conversations(1, 2, 64, 32, 16);
    c.workload.requests[0].prompt = Prompt::Text("hi".into());
    let e = apply(cfg(PrefixCacheMode::HitRate(0.6)), &mut c.workload, &c.bounds).unwrap_err();
    assert_eq!(e.code(), ErrorCode::PrefixCacheWorkload);
    let mut c = conversations(1, 2, 64, 32, 16);
    let mode = PrefixCacheMode::SharedPrefix { prefix_len: 32, target: 0.5 };
    assert_eq!(
        apply(cfg(mode), &mut c.workload, &c.bounds).unwrap_err().code(),
        ErrorCode::PrefixCacheWorkload
    );
}

/// A rerun with the same seed on a server that kept the first run's cache: each request still
/// finds exactly what was built in (its shared prefix and its own history), not the first run's
/// copy of the whole conversation, because the block after each first turn's shared prefix is
/// drawn per run.
#[test]
fn a_rerun_on_a_warm_server_finds_exactly_what_was_built_in() {
    let mut cache = HashSet::new();
    for nonce in [1, 2] {
        let mut c = conversations(2, 3, 64, 32, 16);
        let l = apply(
            PrefixCacheConfig { nonce, ..cfg(PrefixCacheMode::HitRate(0.6)) },
            &mut c.workload,
            &c.bounds,
        )
        .unwrap();
        assert_eq!(l.cached_prefix, vec![32, 64, 112, 16, 64, 112]);
        assert_eq!(
            served_on(&mut cache, &c.workload, &c.bounds, &l.warmup, 16),
            l.cached_prefix,
            "nonce {nonce}"
        );
    }
}
