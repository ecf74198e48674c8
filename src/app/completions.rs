//! `flakelab completions SHELL` and `flakelab man`: clap's own generators
//! (clap_complete, clap_mangen) over the same command definition the
//! parser uses, so they cannot drift from it. Hidden subcommands stay out.

use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs, Shell};
use crate::error::{Error, Result, EXIT_OK};

/// The command without its hidden subcommands (clap_complete's bash
/// script would complete them).
fn visible_command() -> clap::Command {
    let cmd = Cli::command();
    let mut out = clap::Command::new("flakelab")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommand_required(true);
    for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        out = out.arg(a.clone());
    }
    for s in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out = out.subcommand(s.clone());
    }
    out
}

/// The completion script for `shell`.
pub fn completion_script(shell: Shell) -> String {
    use clap_complete::Shell as S;
    let generator = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Powershell => S::PowerShell,
    };
    let mut out = Vec::new();
    clap_complete::generate(generator, &mut visible_command(), "flakelab", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The man page, in roff.
pub fn man_page() -> std::io::Result<String> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    // Each visible subcommand, as a section of the one page.
    let cmd = Cli::command();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name().to_uppercase();
        let mut sub = sub.clone();
        sub.build();
        let man = clap_mangen::Man::new(sub);
        out.extend_from_slice(format!(".SH \"FLAKELAB {name}\"\n").as_bytes());
        man.render_description_section(&mut out)?;
        man.render_options_section(&mut out)?;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub(super) fn completions_cmd(args: &CompletionsArgs) -> Result<i32> {
    super::print_text(&completion_script(args.shell));
    Ok(EXIT_OK)
}

pub(super) fn man_cmd() -> Result<i32> {
    let page = man_page().map_err(|e| {
        Error::harness(
            format!("cannot render the man page: {e}"),
            "report this as a bug",
        )
    })?;
    super::print_text(&page);
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visible() -> Vec<String> {
        Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name().to_string())
            .collect()
    }

    #[test]
    fn every_shell_completes_every_visible_subcommand() {
        let names = visible();
        assert!(names.len() >= 14, "{names:?}");
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::Powershell] {
            let script = completion_script(shell);
            for name in &names {
                assert!(script.contains(name.as_str()), "{shell:?} lacks `{name}`");
            }
        }
    }

    /// bash itself, given the script, completes `flakelab re` to the
    /// subcommands that start so, and no hidden one.
    #[test]
    fn bash_completes_subcommands_from_the_script() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("flakelab.bash");
        std::fs::write(&path, completion_script(Shell::Bash)).unwrap();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; for w in re __; do COMP_WORDS=(flakelab $w); COMP_CWORD=1; COMPREPLY=(); _flakelab flakelab $w flakelab; echo \"$w: ${{COMPREPLY[*]}}\"; done",
                path.display()
            ))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("re: report replay recipes"),
            "{text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("__: \n"), "{text}");
    }

    #[test]
    fn the_man_page_has_a_section_per_visible_subcommand() {
        let page = man_page().unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH flakelab"),
            "{}",
            &page[..200]
        );
        for name in visible() {
            let heading = format!(".SH \"FLAKELAB {}\"", name.to_uppercase());
            assert!(
                page.contains(&heading),
                "no section for `{name}` ({heading})"
            );
        }
        assert!(!page.contains("__warden"));
    }
}
