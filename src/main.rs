//! The `flakelab` binary: parse the command line, hand it to the library,
//! print an error once and exit with the code it maps to.

use clap::Parser;

fn main() {
    let cli = flakelab::cli::Cli::parse();
    let code = match flakelab::app::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}
