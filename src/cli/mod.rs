//! The command line's larger subcommands, kept out of `main.rs`.

pub mod bench;
pub mod calibrate;
pub mod eta;
pub mod fio_args;
pub mod run_checks;
pub mod serve;
pub mod signals;

/// `--arbitration`'s values (`nvmesim run` and `serve`), from the one list
/// of mechanisms, each with its alias and help (shown by `--help`).
pub fn arbitration_values() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let (auto, auto_help) = nvmesim::config::MechanismChoice::AUTO;
    let mut v = vec![PossibleValue::new(auto).help(auto_help)];
    for (_, name, alias, help) in nvmesim::config::Mechanism::ALL {
        v.push(PossibleValue::new(name).help(help).aliases(alias));
    }
    clap::builder::PossibleValuesParser::new(v)
}

/// `--queue-map`'s values, from the one list of queue-map policies.
pub fn queue_map_values() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    let v = nvmesim::host::queue_map::POLICIES
        .iter()
        .map(|p| PossibleValue::new(p.name).help(p.help));
    clap::builder::PossibleValuesParser::new(v)
}
