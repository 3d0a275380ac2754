//! Bootstrap without an embedder: writes the corpus (seed 42), trains the heads with ZERO
//! embeddings (so only the lexical features carry signal), writes the model JSON and prints the
//! test-split evaluation without embeddings. The real model is trained with
//! `hindsight guard train` (MiniLM embeddings); this exists for machines without the model.
//!
//! `cargo run -p hindsight-guard --example bootstrap_lexical -- datasets/injection crates/hindsight-guard/model/classifier.json`

use std::path::PathBuf;

use hindsight_guard::corpus::{Split, generate_corpus, write_corpus};
use hindsight_guard::{Guard, GuardConfig, TrainOptions, evaluate, train_on_corpus};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("datasets/injection", String::as_str));
    let out = PathBuf::from(args.get(2).map_or("classifier.json", String::as_str));
    let records = generate_corpus(hindsight_guard::corpus::DEFAULT_CORPUS_SEED);
    write_corpus(&dir, &records)?;
    let used: Vec<_> = records
        .iter()
        .filter(|r| r.split != Split::Test)
        .cloned()
        .collect();
    let zeros = vec![vec![0f32; 384]; used.len()];
    let opts = TrainOptions {
        embedding_model: "none (lexical bootstrap)".into(),
        ..TrainOptions::default()
    };
    let model = train_on_corpus(&used, &zeros, &opts)?;
    std::fs::write(&out, model.to_json()?)?;
    let test: Vec<_> = records
        .into_iter()
        .filter(|r| r.split == Split::Test)
        .collect();
    let guard = Guard::new(GuardConfig::default(), model);
    println!("{}", evaluate(&guard, &test, None)?.to_markdown());
    Ok(())
}
