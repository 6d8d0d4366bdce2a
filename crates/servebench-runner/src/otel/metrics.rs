//! The run's metrics as OpenTelemetry GenAI client instruments, recorded from the finished
//! records into the SDK and collected once (docs/metrics.md, "OpenTelemetry export").

use super::config::ExportScope;
use super::spans::{cancel_reason, common_attributes, error_type, input_tokens, outcome_name};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality};
use opentelemetry_sdk::Resource;
use servebench_core::metrics::RequestTimes;
use servebench_core::{Outcome, RequestRecord};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Bucket boundaries the GenAI conventions advise: durations (s), token counts, TTFT (s) and
/// time per output chunk (s).
const DURATION_S: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
const TOKENS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];
const TTFC_S: [f64; 16] =
    [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];
const TPOC_S: [f64; 13] = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5];

/// A manual reader the provider owns and we collect from.
#[derive(Debug, Clone)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The instruments of one export.
struct Instruments {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    ttfc: Histogram<f64>,
    tpoc: Histogram<f64>,
    requests: Counter<u64>,
}

impl Instruments {
    fn new(m: &Meter) -> Instruments {
        let hist = |name: &'static str, unit: &'static str, desc: &'static str, b: &[f64]| {
            m.f64_histogram(name).with_unit(unit).with_description(desc).with_boundaries(b.to_vec()).build()
        };
        Instruments {
            duration: hist("gen_ai.client.operation.duration", "s", "GenAI operation duration", &DURATION_S),
            tokens: m
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used")
                .with_boundaries(TOKENS.to_vec())
                .build(),
            ttfc: hist(
                "gen_ai.client.operation.time_to_first_chunk",
                "s",
                "Time to receive the first chunk (servebench TTFT)",
                &TTFC_S,
            ),
            tpoc: hist(
                "gen_ai.client.operation.time_per_output_chunk",
                "s",
                "Time per output chunk after the first (servebench ITL, event view)",
                &TPOC_S,
            ),
            requests: m
                .u64_counter("servebench.requests")
                .with_unit("{request}")
                .with_description("Requests of the run by outcome")
                .build(),
        }
    }

    /// Records one request: its outcome always; its duration when it was sent and ended; its
    /// tokens, TTFT and chunk gaps when it completed.
    fn record(&self, r: &RequestRecord, common: &[KeyValue]) {
        let mut attrs = common.to_vec();
        if let Some(e) = error_type(r) {
            attrs.push(KeyValue::new("error.type", e));
        }
        let mut outcome = attrs.clone();
        outcome.push(KeyValue::new("servebench.outcome", outcome_name(r.outcome)));
        if let Some(c) = cancel_reason(r) {
            outcome.push(KeyValue::new("servebench.cancel_reason", c));
        }
        self.requests.add(1, &outcome);
        let t = RequestTimes::of(r);
        if let Some(d) = t.e2el_us {
            self.duration.record(d as f64 / 1e6, &attrs);
        }
        if r.outcome != Outcome::Completed {
            return;
        }
        let with_type = |ty: &'static str| {
            let mut a = common.to_vec();
            a.push(KeyValue::new("gen_ai.token.type", ty));
            a
        };
        self.tokens.record(u64::from(input_tokens(r)), &with_type("input"));
        self.tokens.record(u64::from(t.output_tokens), &with_type("output"));
        if let Some(v) = t.ttft_us {
            self.ttfc.record(v as f64 / 1e6, common);
        }
        for &g in &r.token_events.gaps_us {
            self.tpoc.record(f64::from(g) / 1e6, common);
        }
    }
}

/// The run's metrics, aggregated over every record (cumulative, one collection).
pub(super) fn collect(s: &ExportScope<'_>, resource: Resource) -> Result<ResourceMetrics, String> {
    let reader =
        SharedReader(Arc::new(ManualReader::builder().with_temporality(Temporality::Cumulative).build()));
    let provider = SdkMeterProvider::builder().with_resource(resource).with_reader(reader.clone()).build();
    let meter = provider.meter_with_scope(super::spans::scope());
    let instruments = Instruments::new(&meter);
    let common = common_attributes(s);
    for r in s.records.iter() {
        instruments.record(&r, &common);
    }
    let mut rm = ResourceMetrics::default();
    reader.collect(&mut rm).map_err(|e| format!("collecting the metrics: {e}"))?;
    // The provider is dropped here; its shutdown only releases the reader.
    let _ = provider.shutdown();
    Ok(rm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use servebench_core::ErrorKind;
    use servebench_testkit::records::RecordBuilder;

    #[test]
    fn metrics_count_every_request_and_sum_the_completed_tokens() {
        let done =
            RecordBuilder::new(0).sent_at(0).stream(40_000, &[10_000, 10_000]).done_at(60_000).usage(3);
        let recs = [
            done.clone().completed(),
            done.with(|r| r.index = 1).completed(),
            RecordBuilder::new(2).sent_at(0).done_at(5_000).failed(ErrorKind::Timeout, "t"),
        ];
        let s = ExportScope {
            records: crate::otel::config::ExportRecords::Slice(&recs),
            wall_anchor_unix_us: 0,
            model: "m".into(),
            provider: "vllm".into(),
            operation: "text_completion",
            server: None,
            labels: Vec::new(),
        };
        let rm = collect(&s, Resource::builder_empty().build()).unwrap();
        let metrics: Vec<_> = rm.scope_metrics().flat_map(|sm| sm.metrics()).collect();
        let find = |n: &str| metrics.iter().find(|m| m.name() == n).copied();
        let Some(AggregatedMetrics::U64(MetricData::Sum(req))) =
            find("servebench.requests").map(|m| m.data())
        else {
            panic!("servebench.requests missing")
        };
        let total: u64 = req.data_points().map(|p| p.value()).sum();
        assert_eq!(total, 3);
        let Some(AggregatedMetrics::U64(MetricData::Histogram(tok))) =
            find("gen_ai.client.token.usage").map(|m| m.data())
        else {
            panic!("token usage missing")
        };
        let sum: u64 = tok.data_points().map(|p| p.sum()).sum();
        // Two completed requests: 10 prompt tokens + 3 output tokens each.
        assert_eq!(sum, 26);
        let Some(AggregatedMetrics::F64(MetricData::Histogram(ttfc))) =
            find("gen_ai.client.operation.time_to_first_chunk").map(|m| m.data())
        else {
            panic!("ttfc missing")
        };
        let p: Vec<_> = ttfc.data_points().collect();
        assert_eq!((p[0].count(), p[0].sum()), (2, 0.08));
    }
}
