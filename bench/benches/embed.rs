//! MiniLM embedding throughput (sentences/s at batch 1, 32, 256 on short sentences) and
//! single-query latency in f32 and bf16. Skipped with a message when the model is not fetched.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use hindsight_embed::{
    Embedder, MiniLmEmbedder, Precision, default_home, is_model_present, model_dir,
};

/// 256 distinct short sentences (well under 32 tokens each), deterministic.
fn short_sentences() -> Vec<String> {
    let subjects = [
        "The user",
        "Our agent",
        "The support team",
        "A customer",
        "The nightly job",
        "This API",
        "The warehouse",
        "My manager",
    ];
    let verbs = [
        "prefers",
        "rejected",
        "asked about",
        "retried",
        "cancelled",
        "reported",
        "approved",
        "forgot",
    ];
    let objects = [
        "express shipping for order 4411",
        "the database migration from last week",
        "a refund after the delivery was late",
        "the rate limit of sixty calls per minute",
    ];
    let mut out = Vec::new();
    for (i, s) in subjects.iter().enumerate() {
        for (j, v) in verbs.iter().enumerate() {
            for (k, o) in objects.iter().enumerate() {
                out.push(format!("{s} {v} {o} (note {}).", i * 32 + j * 4 + k));
            }
        }
    }
    out
}

fn bench(c: &mut Criterion, model: &MiniLmEmbedder) {
    let sentences = short_sentences();
    let longest = sentences
        .iter()
        .map(|s| model.token_ids(s).map_or(0, |t| t.len()))
        .max()
        .unwrap_or(0);
    eprintln!(
        "embed bench: {} sentences, longest {longest} tokens, model {:?}",
        sentences.len(),
        model.space()
    );
    let mut group = c.benchmark_group("minilm_embed");
    // A batch of 256 takes about a second: 10 samples keep the run to minutes.
    group.sample_size(10);
    for batch in [1usize, 32, 256] {
        let texts: Vec<&str> = sentences.iter().take(batch).map(String::as_str).collect();
        group.throughput(Throughput::Elements(batch as u64));
        group.bench_with_input(BenchmarkId::new("batch", batch), &texts, |b, texts| {
            b.iter(|| black_box(model.embed(black_box(texts)).map(|v| v.len())));
        });
    }
    group.finish();
    // A query in f32 and in bf16 (the query path's default where the CPU has AVX-512 BF16; the
    // portable emulation elsewhere is slower than f32).
    let bf16 = model.with_precision(Precision::Bf16);
    // Sixteen queries in one pass: what the coalescer runs at 16 concurrent cold searches.
    let queries: Vec<String> = (0..16)
        .map(|i| format!("what did the user say about express shipping for order {i}?"))
        .collect();
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let int8 = model.with_precision(Precision::Int8);
    for (name, m) in [
        ("minilm_16_queries", model),
        ("minilm_16_queries_bf16", &bf16),
        ("minilm_16_queries_int8", &int8),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| black_box(m.embed(black_box(&queries)).map(|v| v.len())));
        });
    }
    // One stored memory's text (~40 tokens): what a write embeds, in f32 and in bf16 (the
    // documents' arithmetic where Intel AMX runs it; run with HINDSIGHT_NO_AMX=1 for the AVX-512
    // register blocks instead of the tiles).
    let document = "Deploying payment-worker on a Friday failed (OPS-1000): a misconfigured rate \
                    limit took it down for two hours; we rolled back and added a canary stage \
                    before the weekend freeze.";
    for (name, m) in [("minilm_document", model), ("minilm_document_bf16", &bf16)] {
        c.bench_function(name, |b| {
            b.iter(|| black_box(m.embed_one(black_box(document)).map(|v| v.len())));
        });
    }
    for (name, m) in [
        ("minilm_single_query", model),
        ("minilm_single_query_bf16", &bf16),
        ("minilm_single_query_int8", &int8),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                black_box(
                    m.embed_one(black_box("what did the user say about express shipping?"))
                        .map(|v| v.len()),
                )
            });
        });
    }
}

fn main() {
    let dir = model_dir(&default_home());
    if !is_model_present(&dir) {
        eprintln!(
            "embed bench SKIPPED: MiniLM model not found in {} (fetch it first)",
            dir.display()
        );
        return;
    }
    let model = match MiniLmEmbedder::load(&dir) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("embed bench SKIPPED: cannot load the model: {e}");
            return;
        }
    };
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &model);
    c.final_summary();
}
