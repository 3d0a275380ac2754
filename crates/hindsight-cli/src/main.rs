//! The `hindsight` binary: everything lives in the `hindsight_cli` library.

/// mimalloc instead of the system allocator: glibc's malloc, free and `malloc_consolidate` took
/// ~6 % of the server's CPU under the 16-client load run (perf, `reports/load`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    hindsight_cli::main()
}
