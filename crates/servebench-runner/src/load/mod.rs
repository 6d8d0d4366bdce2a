//! Sending the load: the dispatcher and its concurrency gate (`dispatch`), and the load shapes
//! beyond "N prompts on a rate schedule": trace replay (arrivals from the trace),
//! multi-turn conversations, LoRA adapters, `--duration` and `--stages`. The run calls in here
//! at three points: building the workload, building the schedule, and annotating each request.

pub mod agentic;
pub mod cancellation;
pub(crate) mod delivery;
pub mod dispatch;
pub mod early_stop;
pub mod lora;
pub mod prefetch;
pub mod probe_requests;
pub mod release;
pub mod session;
pub mod session_tokens;
pub mod shard;
pub mod stages;
pub mod stops;

use crate::config::load_options::Stage;
use crate::config::{DatasetSpec, LoadOptions, RunConfig};
use crate::prepare::blocking::build_off_runtime;
use crate::prepare::ServerTokenize;
use servebench_client::backend::TargetConfig;
use servebench_client::request::RequestTarget;
use servebench_client::transport::HttpClient;
use servebench_core::schedule::ArrivalSchedule;
use servebench_core::{BenchError, RequestRecord, Requests, Result, TextTokenizer};
use servebench_data::trace::TraceConfig;
use session::Conversations;
use stages::{closed_loop_bounds, is_closed_loop, staged_schedule};
use std::sync::Arc;
use std::time::Duration;

/// Where the measured phase's requests come from: what preparation built beyond the workload.
#[derive(Clone, Default)]
pub enum LoadSource {
    /// Prompts released on the run's rate schedule (random, the datasets, a trace replayed
    /// without its own timing).
    #[default]
    Prompts,
    /// Trace replay at the trace's own timing: the arrival offset of each request.
    Trace { offsets_us: Arc<[u64]> },
    /// Multi-turn: the conversations (their turns are the workload), the tokenizer that
    /// counts each reply for the history, and on token ids the controlled prefix-cache hit rate
    /// laid over them (`session_tokens`).
    Conversations {
        conversations: Arc<Conversations>,
        tokenizer: Arc<dyn TextTokenizer>,
        prefix_cache: Option<Arc<servebench_data::prefix_cache::PrefixCacheLayout>>,
    },
    /// Session trees (`--dataset-name agentic`): the sessions, and the tokenizer that counts
    /// each reply for the history.
    Trees { work: Arc<agentic::TreeWorkload>, tokenizer: Arc<dyn TextTokenizer> },
}

impl LoadSource {
    /// The conversations of a multi-turn run.
    pub fn conversations(&self) -> Option<&Arc<Conversations>> {
        match self {
            LoadSource::Conversations { conversations, .. } => Some(conversations),
            _ => None,
        }
    }
}

impl std::fmt::Debug for LoadSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadSource::Prompts => f.write_str("Prompts"),
            LoadSource::Trace { offsets_us } => write!(f, "Trace({} arrivals)", offsets_us.len()),
            LoadSource::Conversations { conversations, .. } => {
                write!(f, "Conversations({})", conversations.bounds.len())
            }
            LoadSource::Trees { work, .. } => write!(f, "Trees({} sessions)", work.sessions.len()),
        }
    }
}

/// What preparation built for the load, beyond the workload.
#[derive(Debug, Clone, Default)]
pub struct LoadPlan {
    pub source: LoadSource,
    /// LoRA: one request target per adapter (the adapter name as `model`).
    pub lora_targets: Vec<Arc<RequestTarget>>,
    /// The shared prefixes of a controlled prefix-cache hit rate, with the priming prompt.
    pub prefix_cache: Option<Arc<servebench_data::prefix_cache::PrefixCacheLayout>>,
}

const LOCAL_TOKENIZER_FIX: &str =
    "pass --tokenizer with a tokenizer.json path, a model id or a built-in encoding";

fn needs_tokenizer(what: &str) -> BenchError {
    BenchError::config("--tokenizer server", format!("{what} needs a local tokenizer"), LOCAL_TOKENIZER_FIX)
}

/// Builds the measured phase's workload and where its requests come from: trace replay,
/// multi-turn conversations, or prompts of the dataset (built with the client tokenizer, or
/// with the server's `/tokenize` when there is none).
pub async fn build_load(
    cfg: &RunConfig,
    tokenizer: Option<Arc<dyn TextTokenizer>>,
    server: &ServerTokenize,
) -> Result<(Requests, LoadSource)> {
    if let DatasetSpec::TimedTrace(t) = &cfg.dataset {
        let tok = tokenizer.ok_or_else(|| needs_tokenizer("trace replay"))?;
        let built = trace_workload(cfg, t, tok).await?;
        let source = match built.1 {
            Some(offsets_us) => LoadSource::Trace { offsets_us },
            None => LoadSource::Prompts,
        };
        return Ok((built.0, source));
    }
    if let Some(a) = cfg.load.agentic.clone() {
        let tok = tokenizer.ok_or_else(|| needs_tokenizer("session-tree replay"))?;
        let random = match &cfg.dataset {
            DatasetSpec::Random(r) => r.clone(),
            _ => servebench_data::random::RandomDatasetConfig { seed: cfg.seed, ..Default::default() },
        };
        let t = tok.clone();
        let work = build_off_runtime("session-tree loading", move || agentic::build(&a, &random, t.as_ref()))
            .await?;
        let workload = agentic::workload_of(&work).into();
        return Ok((workload, LoadSource::Trees { work: Arc::new(work), tokenizer: tok }));
    }
    if let Some(mt) = cfg.load.multi_turn.clone() {
        let tok = tokenizer.ok_or_else(|| needs_tokenizer("--multi-turn"))?;
        let mut conversations = conversations(cfg, mt, tok.clone()).await?;
        let prefix_cache = session_tokens::lay_prefix_cache(cfg, &mut conversations)?;
        let workload = conversations.workload.clone().into();
        let conversations = Arc::new(conversations);
        let source = LoadSource::Conversations { conversations, tokenizer: tok, prefix_cache };
        return Ok((workload, source));
    }
    let workload = match tokenizer {
        Some(t) => prompt_workload(cfg, t).await?,
        None => match &cfg.dataset {
            DatasetSpec::Random(r) => {
                crate::prepare::server_workload::build_server_workload(server, r).await?.into()
            }
            DatasetSpec::TimedTrace(_) => return Err(needs_tokenizer("trace replay")),
            DatasetSpec::Dataset(d) => {
                return Err(BenchError::config(
                    "--tokenizer server",
                    format!("the {} dataset needs a local tokenizer to count prompt tokens", d.kind.name()),
                    LOCAL_TOKENIZER_FIX,
                ))
            }
        },
    };
    Ok((workload, LoadSource::Prompts))
}

/// The requests of a trace (built on demand from its rows: the file is streamed once and its
/// prompts are built when sent), and its arrival offsets when the trace is replayed at its own
/// timing.
async fn trace_workload(
    cfg: &RunConfig,
    trace: &TraceConfig,
    tokenizer: Arc<dyn TextTokenizer>,
) -> Result<(Requests, Option<Arc<[u64]>>)> {
    let mut t = trace.clone();
    t.max_model_len = cfg.max_model_len;
    let self_timed = t.self_timed;
    let built = build_off_runtime("trace loading", move || {
        servebench_data::trace::prepare_trace(&t, tokenizer.as_ref())
    })
    .await?;
    Ok((Requests::lazy(built.source), self_timed.then(|| built.offsets_us.into())))
}

/// The prompts of the dataset, with the client tokenizer off the runtime: the random dataset
/// and traces build each prompt when it is needed (docs/workloads.md, "Lazy generation"), the
/// other datasets all of them now.
pub async fn prompt_workload(cfg: &RunConfig, tokenizer: Arc<dyn TextTokenizer>) -> Result<Requests> {
    match &cfg.dataset {
        DatasetSpec::TimedTrace(t) => Ok(trace_workload(cfg, t, tokenizer).await?.0),
        DatasetSpec::Random(r) => {
            let r = r.clone();
            build_off_runtime("workload generation", move || {
                servebench_data::random::prepare_random(&r, tokenizer.as_ref()).map(|p| p.requests)
            })
            .await
        }
        DatasetSpec::Dataset(d) => {
            let d = d.clone();
            build_off_runtime("workload generation", move || {
                let env = servebench_data::HubEnv::from_env();
                servebench_data::dataset::build_dataset(&d, tokenizer.as_ref(), &env).map(Requests::from)
            })
            .await
        }
    }
}

/// The conversations of a multi-turn run: synthetic turns (random) or ShareGPT's, truncated
/// to `--max-model-len`.
async fn conversations(
    cfg: &RunConfig,
    mt: crate::config::load_options::MultiTurnConfig,
    tok: Arc<dyn TextTokenizer>,
) -> Result<Conversations> {
    let random = match &cfg.dataset {
        DatasetSpec::Random(r) => Some(r.clone()),
        _ => None,
    };
    let limit = cfg.max_model_len;
    let conv = build_off_runtime("conversation building", move || -> Result<Conversations> {
        let conv = match (&mt.sharegpt_path, &random) {
            (Some(path), _) => {
                let n = random.as_ref().map_or(usize::MAX, |r| r.num_prompts);
                session::sharegpt(path, &mt, n, tok.as_ref())
            }
            (None, Some(r)) if r.prompt_token_ids => {
                session_tokens::token_conversations(&mt, r, tok.as_ref())
            }
            (None, Some(r)) => session::synthetic(&mt, r, tok.as_ref()),
            (None, None) => Err(BenchError::config(
                "--multi-turn",
                "works with the random dataset (synthetic turns) or sharegpt (conversations)",
                "use --dataset-name random, or sharegpt with --dataset-path",
            )),
        }?;
        Ok(session::truncate_to_model_len(conv, limit).0)
    })
    .await?;
    if conv.bounds.is_empty() {
        return Err(BenchError::Dataset {
            detail: "no conversation left after --max-model-len truncation; fix: raise --max-model-len"
                .into(),
            source: None,
        });
    }
    Ok(conv)
}

/// One request target per LoRA adapter (empty without LoRA). `base` is the run's target
/// configuration (base model); only `model` changes.
pub fn lora_targets(
    client: &HttpClient,
    base: &TargetConfig,
    load: &LoadOptions,
) -> Result<Vec<Arc<RequestTarget>>> {
    let Some(lora) = &load.lora else { return Ok(Vec::new()) };
    lora.modules
        .iter()
        .map(|m| {
            let cfg = TargetConfig { model: m.clone(), ..base.clone() };
            RequestTarget::new(client, &cfg).map(Arc::new)
        })
        .collect()
}

/// How the measured phase releases its requests.
#[derive(Debug, Clone)]
pub enum LoadShape {
    /// On a schedule: one intended send offset per request (rate schedule, trace replay,
    /// `--stages RATE:SECONDS`, `--duration`), through the concurrency gate; with stages or a
    /// duration, the stage of each request.
    Scheduled { offsets_us: Vec<u64>, stage: Option<Arc<[u32]>> },
    /// Multi-turn: one start offset per conversation; each turn follows the previous reply.
    Conversations { offsets_us: Vec<u64> },
    /// Session trees: sessions start on their recorded times or N at a time (crate::load::agentic).
    Trees,
    /// Concurrency stages `(concurrency, end µs)`: released in a closed loop (no offsets),
    /// request `i` sending prompt `i mod` the workload's length.
    ClosedLoop { stages: Arc<[(usize, u64)]> },
}

impl LoadShape {
    /// Takes the intended offsets out (none for a closed loop), for the dispatcher.
    pub fn take_offsets(&mut self) -> Vec<u64> {
        match self {
            LoadShape::Scheduled { offsets_us, .. } | LoadShape::Conversations { offsets_us } => {
                std::mem::take(offsets_us)
            }
            LoadShape::ClosedLoop { .. } | LoadShape::Trees => Vec::new(),
        }
    }
}

/// The schedule of the measured phase and what each request is annotated with.
#[derive(Debug, Clone)]
pub struct MeasuredPlan {
    /// The requests of the phase (cycled through the prompts with `--stages`/`--duration`).
    pub workload: Requests,
    pub shape: LoadShape,
    /// LoRA adapter of each request (single-shot) or conversation (multi-turn).
    pub lora: Option<Arc<[u32]>>,
    pub lora_names: Arc<[Arc<str>]>,
    /// End of the phase (`--duration`, or the end of the last stage), µs from the origin.
    pub end_us: Option<u64>,
}

impl MeasuredPlan {
    /// Sets the stage and adapter of request `index`'s record.
    pub fn annotate(&self, rec: &mut RequestRecord, index: usize) {
        if let LoadShape::Scheduled { stage: Some(s), .. } = &self.shape {
            rec.stage = s.get(index).copied();
        }
        if let Some(i) = self.lora.as_ref().and_then(|l| l.get(index)) {
            rec.lora = self.lora_names.get(*i as usize).map(|n| n.to_string());
        }
    }

    /// The adapter index of request `index` (single-shot runs).
    pub fn lora_of(&self, index: usize) -> Option<usize> {
        self.lora.as_ref().and_then(|l| l.get(index)).map(|&i| i as usize)
    }

    /// Requests released in a closed loop: how many is not known in advance.
    pub fn is_closed_loop(&self) -> bool {
        matches!(self.shape, LoadShape::ClosedLoop { .. })
    }
}

fn us(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Builds the measured phase's plan (pure given its inputs).
pub fn measured_plan(cfg: &RunConfig, plan: &LoadPlan, workload: Requests) -> Result<MeasuredPlan> {
    let load = &cfg.load;
    if let LoadSource::Trees { .. } = &plan.source {
        let lora_names: Arc<[Arc<str>]> = Arc::from(Vec::new());
        return Ok(MeasuredPlan { workload, shape: LoadShape::Trees, lora: None, lora_names, end_us: None });
    }
    let duration_us = load.duration.map(us);
    let mut workload = workload;
    let mut offsets_us: Vec<u64>;
    let mut stage: Option<Arc<[u32]>> = None;
    let mut end_us = duration_us;
    if is_closed_loop(&load.stages) {
        let bounds = closed_loop_bounds(&load.stages, duration_us);
        let bounds_end = bounds.last().map(|b| b.1);
        let lora = load.lora.as_ref().map(|l| l.assign(workload.len(), cfg.seed).into());
        let lora_names: Arc<[Arc<str>]> =
            load.lora.iter().flat_map(|l| l.modules.iter().map(|m| Arc::from(m.as_str()))).collect();
        return Ok(MeasuredPlan {
            workload,
            shape: LoadShape::ClosedLoop { stages: bounds.into() },
            lora,
            lora_names,
            end_us: bounds_end,
        });
    }
    let conversations = plan.source.conversations();
    if let Some(conv) = conversations {
        offsets_us = ArrivalSchedule::generate(conv.bounds.len(), &cfg.rate, cfg.seed).offsets_us;
    } else if let LoadSource::Trace { offsets_us: trace } = &plan.source {
        offsets_us = trace[..workload.len().min(trace.len())].to_vec();
    } else if load.stages.is_empty() && !cfg.rate.request_rate.is_finite() && cfg.rate.ramp_up.is_none() {
        // `--duration` with an infinite rate: the --num-prompts requests, all due at once and
        // gated by --max-concurrency, until the end (those still waiting then are cancelled).
        offsets_us = ArrivalSchedule::generate(workload.len(), &cfg.rate, cfg.seed).offsets_us;
    } else if !load.stages.is_empty() || load.duration.is_some() {
        let stages = if load.stages.is_empty() {
            if cfg.rate.ramp_up.is_some() {
                return Err(BenchError::config(
                    "--duration",
                    "cannot be combined with a ramp-up",
                    "drop --ramp-up-strategy, or use --stages RATE:SECONDS,...",
                ));
            }
            vec![Stage::at_rate(cfg.rate.request_rate, load.duration.unwrap_or_default().as_secs_f64())]
        } else {
            load.stages.clone()
        };
        let s = staged_schedule(&stages, cfg.rate.burstiness, cfg.seed);
        let last = s.bounds_us.last().map_or(0, |b| b.1);
        end_us = Some(duration_us.map_or(last, |d| d.min(last)));
        workload = workload.cycle(s.offsets_us.len());
        offsets_us = s.offsets_us;
        stage = Some(s.stage.into());
    } else {
        offsets_us = ArrivalSchedule::generate(workload.len(), &cfg.rate, cfg.seed).offsets_us;
    }
    // Nothing is scheduled at or after the end (trace replay and multi-turn arrivals).
    if let Some(end) = end_us {
        let keep = offsets_us.iter().take_while(|&&o| o < end).count();
        offsets_us.truncate(keep);
        if conversations.is_none() {
            workload = workload.first(keep);
            if let Some(s) = stage.as_ref() {
                stage = Some(s[..keep.min(s.len())].into());
            }
        }
    }
    if offsets_us.is_empty() {
        // The flag that ends the run: --duration when given, else the last of --stages.
        let (flag, fix) = match load.duration {
            Some(_) => ("--duration", "lengthen --duration, or raise the rate"),
            None => ("--stages", "lengthen the stages, or raise their rates"),
        };
        return Err(BenchError::config(flag, "no request is scheduled before the end of the run", fix));
    }
    let (lora, lora_names) = match &load.lora {
        Some(l) => {
            let units = match conversations {
                Some(c) => c.bounds.len(),
                None => workload.len(),
            };
            let names: Arc<[Arc<str>]> = l.modules.iter().map(|m| Arc::from(m.as_str())).collect();
            (Some(l.assign(units, cfg.seed).into()), names)
        }
        None => (None, Arc::from(Vec::new())),
    };
    let shape = match conversations {
        Some(_) => LoadShape::Conversations { offsets_us },
        None => LoadShape::Scheduled { offsets_us, stage },
    };
    Ok(MeasuredPlan { workload, shape, lora, lora_names, end_us })
}

/// The conversation runner of a multi-turn run (`None` for other runs).
#[allow(clippy::too_many_arguments)]
pub fn session_run(
    cfg: &RunConfig,
    plan: &LoadPlan,
    measured: &MeasuredPlan,
    client: &HttpClient,
    target: &Arc<RequestTarget>,
    opts: &Arc<servebench_client::request::ExecOptions>,
    clock: servebench_core::RunClock,
    live: Option<Arc<crate::observe::live::LiveMetrics>>,
) -> Option<session::SessionRun> {
    let LoadSource::Conversations { conversations: conv, tokenizer, .. } = &plan.source else { return None };
    let mt = cfg.load.multi_turn.clone().unwrap_or_default();
    let targets: Arc<[Arc<RequestTarget>]> = if plan.lora_targets.is_empty() {
        vec![target.clone()].into()
    } else {
        plan.lora_targets.clone().into()
    };
    let lora_of: Arc<[(u32, Arc<str>)]> = match &measured.lora {
        Some(l) => l
            .iter()
            .map(|&i| (i, measured.lora_names.get(i as usize).cloned().unwrap_or_else(|| Arc::from(""))))
            .collect(),
        None => Arc::from(Vec::new()),
    };
    Some(session::SessionRun {
        client: client.clone(),
        targets,
        lora_of,
        opts: opts.clone(),
        clock,
        request_id_prefix: cfg.request_id_prefix.clone(),
        delay: mt.delay,
        concurrency: mt.concurrency.or(cfg.max_concurrency).unwrap_or(conv.bounds.len()),
        tokenizer: Some(tokenizer.clone()),
        keep_text: cfg.keep_text,
        live,
        prefill: shard::max_prefill_concurrency(cfg).map(|c| Arc::new(tokio::sync::Semaphore::new(c.max(1)))),
        cancellation: cancellation::plan(cfg),
    })
}

/// The session-tree runner of a session-tree run (`None` for other runs).
#[allow(clippy::too_many_arguments)]
pub fn tree_run(
    cfg: &RunConfig,
    plan: &LoadPlan,
    client: &HttpClient,
    target: &Arc<RequestTarget>,
    opts: &Arc<servebench_client::request::ExecOptions>,
    clock: servebench_core::RunClock,
    live: Option<Arc<crate::observe::live::LiveMetrics>>,
) -> Option<(agentic::TreeRun, Arc<agentic::TreeWorkload>)> {
    let LoadSource::Trees { work, tokenizer } = &plan.source else { return None };
    let a = cfg.load.agentic.as_ref()?;
    let run = agentic::TreeRun {
        client: client.clone(),
        target: target.clone(),
        opts: opts.clone(),
        clock,
        request_id_prefix: cfg.request_id_prefix.clone(),
        concurrency: cfg.max_concurrency.unwrap_or_else(|| work.turns()),
        tokenizer: Some(tokenizer.clone()),
        keep_text: cfg.keep_text,
        controls: agentic::TreeControls::of(a),
        live,
    };
    Some((run, work.clone()))
}
