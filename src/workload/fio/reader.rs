//! The job-file reader: INI sections, `include` files, `${VAR}` and the
//! `$pagesize`/`$ncpus` keywords (evaluated as `bc` integer arithmetic), the
//! command line's `--name` sections, and where each option was written (file
//! and line) for error messages. It follows fio 3.33's `init.c`
//! (`__parse_jobs_ini`, `parse_cmd_line`, `skip_this_section`) and
//! `options.c` (`fio_keyword_replace`); it knows nothing of option meanings.

use super::parse::ParseContext;

/// A job-file error: where it is and which option it is about.
/// Displays as `FILE:LINE: option 'NAME': MESSAGE`, or `FILE:LINE: MESSAGE`
/// for structural errors, or `FILE: MESSAGE` when there is no line (I/O errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_error(.file, .line, .option, .message))]
pub struct FioError {
    pub file: String,
    /// 1-based line; 0 when the error is not about a line (the file could not be read).
    pub line: usize,
    /// The option as written in the file (so `IOEngine`, not `ioengine`).
    pub option: Option<String>,
    pub message: String,
}

pub(super) fn render_error(file: &str, line: &usize, option: &Option<String>, message: &str) -> String {
    let loc = if *line == 0 {
        file.to_string()
    } else {
        format!("{file}:{line}")
    };
    match option {
        Some(o) => format!("{loc}: option '{o}': {message}"),
        None => format!("{loc}: {message}"),
    }
}

/// `include FILE` lines: the text after `include` and one separator.
pub(super) fn include_arg(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    rest.starts_with([' ', '\t']).then(|| &rest[1..])
}

/// Integer arithmetic as `bc` (scale 0) evaluates it: `+ - * / % ^` and parentheses.
pub(super) fn eval_arith(s: &str) -> Result<i128, String> {
    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
        }
        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.b.get(self.i).copied()
        }
        fn expr(&mut self) -> Result<i128, String> {
            let mut v = self.term()?;
            while let Some(c @ (b'+' | b'-')) = self.peek() {
                self.i += 1;
                let r = self.term()?;
                v = if c == b'+' { v.checked_add(r) } else { v.checked_sub(r) }.ok_or("overflow")?;
            }
            Ok(v)
        }
        fn term(&mut self) -> Result<i128, String> {
            let mut v = self.power()?;
            while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
                self.i += 1;
                let r = self.power()?;
                v = match c {
                    b'*' => v.checked_mul(r).ok_or("overflow")?,
                    _ if r == 0 => return Err("divide by zero".into()),
                    b'/' => v / r,
                    _ => v % r,
                };
            }
            Ok(v)
        }
        fn power(&mut self) -> Result<i128, String> {
            let base = self.unary()?;
            if self.peek() == Some(b'^') {
                self.i += 1;
                let e = self.power()?;
                let e = u32::try_from(e).map_err(|_| "negative or huge exponent")?;
                return base.checked_pow(e).ok_or_else(|| "overflow".into());
            }
            Ok(base)
        }
        fn unary(&mut self) -> Result<i128, String> {
            match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    Ok(-self.unary()?)
                }
                Some(b'(') => {
                    self.i += 1;
                    let v = self.expr()?;
                    if self.peek() != Some(b')') {
                        return Err("missing ')'".into());
                    }
                    self.i += 1;
                    Ok(v)
                }
                Some(c) if c.is_ascii_digit() => {
                    let st = self.i;
                    while self.b.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    std::str::from_utf8(&self.b[st..self.i])
                        .unwrap()
                        .parse::<i128>()
                        .map_err(|_| "number too large".into())
                }
                Some(c) => Err(format!("unexpected '{}'", c as char)),
                None => Err("missing operand".into()),
            }
        }
    }
    let mut p = P { b: s.as_bytes(), i: 0 };
    let v = p.expr()?;
    match p.peek() {
        None => Ok(v),
        Some(c) => Err(format!("unexpected '{}'", c as char)),
    }
}

// The INI reader.

/// Where an option was written: a file of the parse (index into
/// `Parser::files`) and a 1-based line (0 on the command line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Loc {
    pub(super) file: u32,
    pub(super) line: usize,
}

pub(super) struct RawOpt {
    /// Key as written.
    pub(super) key: String,
    pub(super) value: Option<String>,
    pub(super) at: Loc,
}

pub(super) struct RawSection {
    pub(super) name: String,
    pub(super) at: Loc,
    pub(super) global: bool,
    pub(super) opts: Vec<RawOpt>,
}

/// The name command-line job options are reported under in errors.
pub const CMDLINE: &str = "<command line>";

/// `include` files nest at most this deep (fio has no limit and loops forever on a cycle).
pub(super) const MAX_INCLUDE_DEPTH: usize = 16;

pub(super) struct Parser<'a> {
    pub(super) ctx: &'a ParseContext<'a>,
    /// Names of the files read so far (`Loc::file` indexes this).
    pub(super) files: std::cell::RefCell<Vec<String>>,
}

impl Parser<'_> {
    pub(super) fn add_file(&self, name: &str) -> u32 {
        let mut f = self.files.borrow_mut();
        f.push(name.to_string());
        (f.len() - 1) as u32
    }

    pub(super) fn err_at(&self, at: Loc, option: Option<&str>, message: impl Into<String>) -> FioError {
        FioError {
            file: self.files.borrow()[at.file as usize].clone(),
            line: at.line,
            option: option.map(str::to_string),
            message: message.into(),
        }
    }

    /// fio's `skip_this_section`: with `--section`, only the named sections
    /// (and every `[global]`) are read.
    pub(super) fn skip_section(&self, name: &str) -> bool {
        !self.ctx.sections.is_empty() && !name.starts_with("global") && !self.ctx.sections.iter().any(|s| s == name)
    }

    /// fio's `${VAR}` substitution; an unset variable is an error here.
    pub(super) fn expand(&self, s: &str) -> Result<String, String> {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            match after.find('}') {
                Some(j) if j > 0 => {
                    let var = &after[..j];
                    match (self.ctx.env)(var) {
                        Some(val) => out.push_str(&val),
                        None => return Err(format!("environment variable '{var}' is not set (in '{s}')")),
                    }
                    rest = &after[j + 1..];
                }
                _ => {
                    out.push_str("${");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// fio's `fio_keyword_replace` (options.c): `$pagesize`, `$mb_memory` and
    /// `$ncpus` are replaced in a job-file line, and a line that had one has
    /// its value evaluated as arithmetic (fio pipes it through `bc`; a value
    /// bc cannot evaluate fails the job: "fio: failed parsing").
    pub(super) fn keywords(&self, line: &str) -> Result<String, String> {
        let Some((key, val)) = line.split_once('=') else {
            return Ok(line.to_string());
        };
        let mut v = val.to_string();
        let mut any = false;
        for word in ["$pagesize", "$mb_memory", "$ncpus"] {
            while let Some(i) = v.find(word) {
                let rep = match word {
                    "$pagesize" => self.ctx.pagesize.to_string(),
                    "$ncpus" => match self.ctx.ncpus {
                        Some(n) => n.to_string(),
                        None => return Err("$ncpus: the simulated host's CPU count is not known here".into()),
                    },
                    _ => {
                        return Err(
                            "$mb_memory is not supported by nvmesim (the simulated host's memory size is not \
                                    modelled)"
                                .into(),
                        )
                    }
                };
                v.replace_range(i..i + word.len(), &rep);
                any = true;
            }
        }
        if !any {
            return Ok(line.to_string());
        }
        let n = eval_arith(v.trim()).map_err(|e| {
            format!(
                "'{}': fio evaluates a value holding $pagesize, $mb_memory or $ncpus as arithmetic (with bc), and \
                 this is not arithmetic: {e}",
                v.trim()
            )
        })?;
        Ok(format!("{key}={n}"))
    }

    /// One option line of a job file: `${VAR}`s, keywords, then `key[=value]`.
    pub(super) fn option_line(&self, at: Loc, line: &str) -> Result<RawOpt, FioError> {
        let key_written = line.split('=').next().unwrap_or("").trim().to_string();
        let expanded = self
            .expand(line)
            .and_then(|l| self.keywords(&l))
            .map_err(|m| self.err_at(at, Some(&key_written), m))?;
        let (key, value) = match expanded.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (expanded.trim().to_string(), None),
        };
        if key.is_empty() {
            return Err(self.err_at(at, None, format!("missing option name in '{line}'")));
        }
        Ok(RawOpt { key, value, at })
    }

    /// The job-file lines of `text`: (1-based line number, line without comment and blanks).
    fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
        text.split('\n').enumerate().filter_map(|(idx, raw)| {
            // fio's strip_blank_end: a ';' or '#' anywhere starts a comment.
            let cut = raw.find([';', '#']).map_or(raw, |i| &raw[..i]);
            let line = cut.trim_matches(|c: char| c.is_whitespace() || c.is_control());
            (!line.is_empty()).then_some((idx + 1, line))
        })
    }

    /// `include FILE` (fio `__parse_jobs_ini`): FILE as given if it exists,
    /// else relative to the including file's directory.
    pub(super) fn include(
        &self,
        from: &str,
        at: Loc,
        arg: &str,
        sec: &mut RawSection,
        depth: usize,
    ) -> Result<(), FioError> {
        let name = arg.trim();
        if name.is_empty() {
            return Err(self.err_at(at, Some("include"), "include needs a file name"));
        }
        if depth > MAX_INCLUDE_DEPTH {
            return Err(self.err_at(
                at,
                Some("include"),
                format!("includes nested more than {MAX_INCLUDE_DEPTH} deep (does '{name}' include itself?)"),
            ));
        }
        let read = |p: &str| (self.ctx.include)(p).map_err(|e| self.err_at(at, Some("include"), e));
        let found = match read(name)? {
            Some(t) => Some((name.to_string(), t)),
            None => match from.rfind('/') {
                Some(i) => {
                    let full = format!("{}{name}", &from[..=i]);
                    read(&full)?.map(|t| (full, t))
                }
                None => None,
            },
        };
        let Some((path, text)) = found else {
            return Err(self.err_at(
                at,
                Some("include"),
                format!("unable to open include file '{name}' (looked for it as given and next to {from})"),
            ));
        };
        let f = self.add_file(&path);
        for (lineno, line) in Self::lines(&text) {
            let at = Loc { file: f, line: lineno };
            if line.starts_with('[') {
                return Err(self.err_at(
                    at,
                    None,
                    "no new sections in included files (fio: No new sections in included files)",
                ));
            }
            if let Some(rest) = include_arg(line) {
                self.include(&path, at, rest, sec, depth + 1)?;
                continue;
            }
            sec.opts.push(self.option_line(at, line)?);
        }
        Ok(())
    }

    /// A job file's sections (those `--section` leaves in) and its line count.
    pub(super) fn read_file(&self, path: &str, text: &str) -> Result<(Vec<RawSection>, Loc), FioError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let f = self.add_file(path);
        let mut sections: Vec<RawSection> = Vec::new();
        let mut skipping = false;
        for (lineno, line) in Self::lines(text) {
            let at = Loc { file: f, line: lineno };
            if let Some(inner) = line.strip_prefix('[') {
                let Some(name) = inner.strip_suffix(']') else {
                    return Err(self.err_at(at, None, format!("malformed section header '{line}' (missing ']')")));
                };
                if name.trim().is_empty() {
                    return Err(self.err_at(at, None, "empty section name"));
                }
                let global = name == "global";
                if !global && name.starts_with("global") {
                    return Err(self.err_at(
                        at,
                        None,
                        format!(
                            "section '[{name}]': fio treats any name starting with 'global' as [global]; rename it"
                        ),
                    ));
                }
                skipping = self.skip_section(name);
                if !skipping {
                    sections.push(RawSection {
                        name: name.to_string(),
                        at,
                        global,
                        opts: Vec::new(),
                    });
                }
                continue;
            }
            if skipping {
                continue;
            }
            let Some(sec) = sections.last_mut() else {
                let key_written = line.split('=').next().unwrap_or("").trim().to_string();
                return Err(self.err_at(
                    at,
                    Some(&key_written),
                    format!("option outside of any [section] (fio: option <{line}> outside of [] job section)"),
                ));
            };
            if let Some(rest) = include_arg(line) {
                self.include(path, at, rest, sec, 1)?;
                continue;
            }
            sec.opts.push(self.option_line(at, line)?);
        }
        let nlines = text.lines().count().max(1);
        Ok((sections, Loc { file: f, line: nlines }))
    }

    /// fio `parse_cmd_line`: each `--name` starts a job; options before the
    /// first one (or after `--name=global`) are global. A `--name` that
    /// `--section` leaves out is dropped, and (as in fio) the options after
    /// it, up to the next `--name`, then go to the global options.
    pub(super) fn cmdline_sections(&self, opts: &[(String, Option<String>)]) -> Vec<RawSection> {
        let at = Loc {
            file: self.add_file(CMDLINE),
            line: 0,
        };
        let mut out = Vec::new();
        let mut cur: Option<RawSection> = None;
        for (k, v) in opts {
            if k == "name" {
                out.extend(cur.take());
            }
            let sec = match &mut cur {
                Some(s) => s,
                None => {
                    let is_section = k == "name";
                    let val = v.as_deref().unwrap_or("");
                    if is_section && self.skip_section(val) {
                        continue;
                    }
                    let global = !is_section || val.starts_with("global");
                    cur.insert(RawSection {
                        name: if global { "global".into() } else { val.to_string() },
                        at,
                        global,
                        opts: Vec::new(),
                    })
                }
            };
            sec.opts.push(RawOpt {
                key: k.clone(),
                value: v.clone(),
                at,
            });
        }
        out.extend(cur);
        out
    }
}
