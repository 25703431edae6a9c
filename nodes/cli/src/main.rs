//! The `convoy` command. Thin by design: everything it does lives in the `convoy_cli` library.

fn main() -> std::process::ExitCode {
    convoy_cli::main()
}
