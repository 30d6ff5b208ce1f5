//! fio's `--cmdhelp[=OPTION]` and `--enghelp[=ENGINE[,OPTION]]` from the
//! option table (`OPTIONS`), laid out as fio 3.33 prints them (parse.c
//! `show_cmd_help`, `show_option_help`, `print_option`; ioengines.c
//! `fio_show_ioengine_help`), each option with what nvmesim does with it.

use super::options::{levenshtein, Answer, FioOption, OPTIONS, OTHER_FIO_ENGINES, SUPPORTED_ENGINES};

/// What a help request printed, and whether it found what it was asked.
pub struct Help {
    /// For stdout.
    pub out: String,
    /// For stderr (`No such command: x`), empty when found.
    pub err: String,
    pub found: bool,
}

fn answer(o: &FioOption) -> String {
    match o.answer {
        Answer::Modelled => "modelled".to_string(),
        Answer::NoEffect(why) => format!("accepted, no effect ({why})"),
        Answer::Refused("") => "refused (an engine option nvmesim does not implement)".to_string(),
        Answer::Refused(why) => format!("refused ({why})"),
    }
}

/// One option in full (parse.c `show_option_help`): name and help, alias,
/// value (an enum's valid words), default, engines, and nvmesim's answer.
fn option_help(o: &FioOption, out: &mut String) {
    out.push_str(&format!("{:>20}: {}\n", o.name, o.help));
    if !o.alias.is_empty() {
        out.push_str(&format!("{:>20}: {}\n", "alias", o.alias));
    }
    out.push_str(&format!("{:>20}: {}\n", "type", o.kind.grammar()));
    let default = if o.default.is_empty() { "no default" } else { o.default };
    out.push_str(&format!("{:>20}: {default}\n", "default"));
    if !o.engines.is_empty() {
        out.push_str(&format!("{:>20}: {}\n", "ioengine", o.engines.join(", ")));
    }
    out.push_str(&format!("{:>20}: {}\n", "nvmesim", answer(o)));
    out.push('\n');
}

/// The options `name` asks about among `options` (parse.c `show_cmd_help`):
/// every one, one line each, for `None` or `all`; else the one with that
/// name or alias in full, or, when there is none, `No such command` and the
/// closest option within an edit distance of 2.
fn cmd_help<'a>(options: impl Iterator<Item = &'a FioOption> + Clone, name: Option<&str>) -> Help {
    let mut out = String::new();
    match name {
        None | Some("all") => {
            for o in options {
                let tag = match o.answer {
                    Answer::Modelled => "",
                    Answer::NoEffect(_) => " [nvmesim: no effect]",
                    Answer::Refused(_) => " [nvmesim: refused]",
                };
                out.push_str(&format!("{:<24}: {}{tag}\n", o.name, o.help));
            }
            Help {
                out,
                err: String::new(),
                found: true,
            }
        }
        Some(name) => {
            if let Some(o) = options
                .clone()
                .find(|o| o.name == name || (!o.alias.is_empty() && o.alias == name))
            {
                option_help(o, &mut out);
                return Help {
                    out,
                    err: String::new(),
                    found: true,
                };
            }
            // The first option at the least distance, if under 3.
            let closest = options
                .clone()
                .map(|o| (levenshtein(name, o.name), o))
                .fold(None, |best: Option<(usize, &FioOption)>, (d, o)| match best {
                    Some((bd, _)) if bd <= d => best,
                    _ => Some((d, o)),
                })
                .filter(|(d, _)| *d < 3);
            if let Some((_, o)) = closest {
                out.push_str(" - showing closest match\n");
                option_help(o, &mut out);
            } else {
                out.push('\n');
            }
            Help {
                out,
                err: format!("No such command: {name}"),
                found: false,
            }
        }
    }
}

/// fio `--cmdhelp[=OPTION]`: the core and engine options (`all` or no
/// OPTION: every one, one line each).
pub fn cmdhelp(name: Option<&str>) -> Help {
    cmd_help(OPTIONS.iter(), name)
}

/// fio `--enghelp[=ENGINE[,OPTION]]`: without ENGINE the engines nvmesim
/// runs; with it, that engine's own options (or OPTION among them).
pub fn enghelp(arg: Option<&str>) -> Help {
    let not_found = |out: String| Help {
        out,
        err: String::new(),
        found: false,
    };
    let Some(arg) = arg.filter(|a| !a.is_empty()) else {
        let mut out = String::from("Available IO engines:\n");
        for (name, _) in SUPPORTED_ENGINES {
            out.push_str(&format!("\t{name}\n"));
        }
        return Help {
            out,
            err: String::new(),
            found: true,
        };
    };
    let (engine, option) = match arg.split_once(',') {
        Some((e, o)) => (e, Some(o)),
        None => (arg, None),
    };
    if !SUPPORTED_ENGINES.iter().any(|(n, _)| *n == engine) {
        if OTHER_FIO_ENGINES.contains(&engine) {
            return not_found(format!("IO engine {engine} is not supported by nvmesim\n"));
        }
        return not_found(format!("IO engine {engine} not found\n"));
    }
    let own = OPTIONS.iter().filter(|o| o.engines.contains(&engine));
    if own.clone().next().is_none() {
        return not_found(format!("IO engine {engine} has no options\n"));
    }
    cmd_help(own, option)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdhelp_prints_an_option_as_fio_lays_it_out_with_nvmesims_answer() {
        let h = cmdhelp(Some("bs"));
        assert!(h.found && h.err.is_empty());
        let lines: Vec<&str> = h.out.lines().collect();
        assert!(lines[0].starts_with("                  bs: "), "{}", h.out);
        assert_eq!(lines[1], "               alias: blocksize");
        assert!(h.out.contains("             nvmesim: modelled\n"), "{}", h.out);
        // By alias; the valid words.
        let h = cmdhelp(Some("readwrite"));
        assert!(h.out.starts_with("                  rw: "), "{}", h.out);
        assert!(
            h.out.contains("                type: read, write, trim, randread,"),
            "{}",
            h.out
        );
        // An option accepted with no effect says why.
        assert!(cmdhelp(Some("randrepeat"))
            .out
            .contains("nvmesim: accepted, no effect ("));
        // Unknown: fio's message and its closest match.
        let h = cmdhelp(Some("bz"));
        assert!(!h.found);
        assert_eq!(h.err, "No such command: bz");
        assert!(
            h.out.starts_with(" - showing closest match\n                  bs: "),
            "{}",
            h.out
        );
        let h = cmdhelp(Some("nosuchoptionatall"));
        assert_eq!((h.found, h.out.as_str()), (false, "\n"));
        // All: one line each, every option of the table.
        let all = cmdhelp(None);
        assert_eq!(all.out.lines().count(), OPTIONS.len());
        assert_eq!(all.out, cmdhelp(Some("all")).out);
        assert!(all.out.contains("\nbs                      : "), "{}", all.out);
    }

    #[test]
    fn enghelp_lists_the_engines_and_an_engines_own_options() {
        let h = enghelp(None);
        assert!(h.out.starts_with("Available IO engines:\n\tlibaio\n"), "{}", h.out);
        assert_eq!(h.out.lines().count(), 1 + SUPPORTED_ENGINES.len());
        let h = enghelp(Some("io_uring"));
        assert!(h.found);
        assert!(h.out.lines().any(|l| l.starts_with("hipri ")), "{}", h.out);
        assert!(!h.out.lines().any(|l| l.starts_with("bs ")), "{}", h.out);
        let h = enghelp(Some("libaio,cmdprio_percentage"));
        assert!(h.out.starts_with("  cmdprio_percentage: "), "{}", h.out);
        assert!(h.out.contains("ioengine: libaio, io_uring"), "{}", h.out);
        for (arg, said) in [
            ("psync", "IO engine psync has no options\n"),
            ("nosuch", "IO engine nosuch not found\n"),
            ("mmap", "IO engine mmap is not supported by nvmesim\n"),
        ] {
            let h = enghelp(Some(arg));
            assert_eq!((h.found, h.out.as_str()), (false, said));
        }
    }
}
