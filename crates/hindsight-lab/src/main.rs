fn main() -> std::process::ExitCode {
    hindsight_lab::main()
}
