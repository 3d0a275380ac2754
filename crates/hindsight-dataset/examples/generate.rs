//! Writes the generated dataset: `cargo run -p hindsight-dataset --example generate -- 42 datasets/agent-memory-bilingual`

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(seed), Some(out)) = (args.first(), args.get(1)) else {
        eprintln!("usage: generate <seed> <out-dir>");
        return ExitCode::from(2);
    };
    let Ok(seed) = seed.parse::<u64>() else {
        eprintln!("seed must be an unsigned integer, got {seed:?}");
        return ExitCode::from(2);
    };
    let dataset = hindsight_dataset::generate(seed);
    if let Err(e) = hindsight_dataset::write_dataset(out, &dataset) {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    println!("wrote {out}: {}", dataset.summary());
    for (tag, n) in dataset.meta.counts.get("query_tags").into_iter().flatten() {
        println!("  {tag}: {n}");
    }
    ExitCode::SUCCESS
}
