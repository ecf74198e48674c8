//! The `flakelab` binary: parse the command line, hand it to the library,
//! print an error once and exit with the code it maps to.

use clap::{CommandFactory as _, FromArgMatches as _};

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // clap writes help and usage errors before `--color` is parsed: tell it.
    let mut command = flakelab::cli::Cli::command();
    command = match flakelab::cli::ColorWhen::in_args(&args) {
        Some(flakelab::cli::ColorWhen::Always) => command.color(clap::ColorChoice::Always),
        Some(flakelab::cli::ColorWhen::Never) => command.color(clap::ColorChoice::Never),
        _ => command,
    };
    let cli = command
        .try_get_matches_from_mut(args)
        .and_then(|m| flakelab::cli::Cli::from_arg_matches(&m))
        .unwrap_or_else(|e| e.format(&mut command).exit());
    let code = match flakelab::app::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}
