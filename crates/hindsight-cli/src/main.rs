//! The `hindsight` binary: everything lives in the `hindsight_cli` library.

fn main() -> std::process::ExitCode {
    hindsight_cli::main()
}
