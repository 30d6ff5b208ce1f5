//! `nvmesim run`'s command line as fio's: the simulator's own flags are
//! told apart from fio's `--name=... --rw=...` job options, fio's own flags
//! that make no sense here are refused with the reason, and an unknown flag
//! gets fio's "did you mean" hint.

use nvmesim::workload::fio;

/// `nvmesim run` flags that take a value (`--flag VALUE` or `--flag=VALUE`).
const RUN_VALUE_FLAGS: &[&str] = &[
    "config",
    "host",
    "device",
    "precondition",
    "queue-map",
    "arbitration",
    "weights",
    "output-format",
    "terse-version",
    "output",
    "section",
    "status-interval",
    "eta",
    "eta-newline",
    "seed",
    "log-dir",
    "max-log-size",
    "max-trace-records",
    "end-with",
    "ionice",
    "occupancy-log",
];

/// `nvmesim run` flags without a value.
const RUN_BOOL_FLAGS: &[&str] = &[
    "minimal",
    "parse-only",
    "showcmd",
    "verify",
    "quiet",
    "help",
    "readonly",
];

/// fio's flags whose value is optional and, as getopt's `optional_argument`,
/// only written with `=` (`--cmdhelp`, `--cmdhelp=bs`).
const RUN_OPTIONAL_VALUE_FLAGS: &[&str] = &["cmdhelp", "enghelp"];

/// fio's client/server options (init.c `l_opts`).
const FIO_CLIENT_SERVER: &[&str] = &[
    "server",
    "client",
    "remote-config",
    "daemonize",
    "server-internal",
    "trigger-remote",
];

/// fio's other command-line options (init.c `l_opts`), which nvmesim does not have.
const FIO_UNSUPPORTED: &[&str] = &[
    "latency-log",
    "bandwidth-log",
    "append-terse",
    "version",
    "eta-interval",
    "debug",
    "inflate-log",
    "alloc-size",
    "profile",
    "warnings-fatal",
    "max-jobs",
    "cpuclock-test",
    "crctest",
    "memcpytest",
    "idle-prof",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "aux-path",
    "merge-blktrace-only",
];

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Splits `nvmesim run`'s arguments as fio's getopt_long_only would see them:
/// nvmesim's own flags and the job files stay for clap; fio job options
/// (`--name=x`, `--bs 4k`, `-rw=read`, valueless flags like `--time_based`)
/// come out in order. fio's client/server and other unsupported top-level
/// options are errors here, before clap could suggest an unrelated flag.
/// fio job options from the command line: option and value, in order.
pub type JobOptions = Vec<(String, Option<String>)>;

pub fn split_fio_args(args: &[String]) -> Result<(Vec<String>, JobOptions), String> {
    let mut keep = Vec::new();
    let mut job = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            keep.extend(args[i..].iter().cloned());
            break;
        }
        // Long options: `--key`, and (getopt_long_only) `-key` with two or more letters.
        let body = match arg.strip_prefix("--") {
            Some(b) => b,
            None => match arg.strip_prefix('-') {
                Some(b) if b.len() >= 2 && !b.starts_with(|c: char| c.is_ascii_digit()) => b,
                _ => {
                    keep.push(arg.clone());
                    continue;
                }
            },
        };
        let (key, val) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        let next_value = |i: &mut usize| -> Result<String, String> {
            let v = args
                .get(*i)
                .cloned()
                .ok_or_else(|| format!("option {arg} requires an argument"))?;
            *i += 1;
            Ok(v)
        };
        if key == "verify" && val.is_some() {
            // fio's job option verify=METHOD (nvmesim's own --verify takes no value).
            job.push((key.to_string(), val));
        } else if RUN_VALUE_FLAGS.contains(&key) {
            let v = match val {
                Some(v) => v,
                None => next_value(&mut i)?,
            };
            keep.push(format!("--{key}={v}"));
        } else if RUN_BOOL_FLAGS.contains(&key) || RUN_OPTIONAL_VALUE_FLAGS.contains(&key) {
            keep.push(format!("--{body}"));
        } else if FIO_CLIENT_SERVER.contains(&key) {
            return Err(format!(
                "{arg}: fio's client/server mode is not supported: nvmesim simulates the whole machine in \
                 this process (run `nvmesim run` with the job files instead)"
            ));
        } else if FIO_UNSUPPORTED.contains(&key) {
            let hint = if key == "version" {
                " (nvmesim --version prints nvmesim's)"
            } else {
                ""
            };
            return Err(format!("{arg}: fio's --{key} is not supported by nvmesim{hint}"));
        } else if let Some(takes_value) = fio::cmdline_option(key) {
            let v = match val {
                Some(v) => Some(v),
                None if takes_value => Some(next_value(&mut i)?),
                None => None,
            };
            if takes_value && v.as_deref() == Some("") {
                return Err(format!("fio: option {key} requires an argument ({arg})"));
            }
            job.push((key.to_string(), v));
        } else {
            let ours = RUN_VALUE_FLAGS
                .iter()
                .chain(RUN_BOOL_FLAGS)
                .chain(RUN_OPTIONAL_VALUE_FLAGS)
                .map(|f| (levenshtein(key, f), *f))
                .min()
                .filter(|(d, _)| *d <= key.len().div_ceil(3));
            let hint = match (ours, fio::closest_option(key)) {
                (Some((_, f)), _) => format!("; did you mean --{f}?"),
                (None, Some(o)) => format!("; did you mean the fio job option --{o}?"),
                (None, None) => String::new(),
            };
            return Err(format!(
                "unrecognized option '{arg}' (neither an nvmesim run flag nor a fio job option){hint}"
            ));
        }
    }
    Ok((keep, job))
}
