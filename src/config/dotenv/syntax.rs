//! The syntax of a `.env` file, read as data: `NAME=value` lines, an
//! optional `export ` before the name, `#` comments, values bare, in
//! `'single'` quotes (literal) or `"double"` quotes (`\n`, `\t`, `\r`, `\"`,
//! `\\`, `\$` escapes), quoted values over several lines.
//!
//! It must never look anything up: there is no `$VAR` expansion (a `$`
//! is a `$`), because expanding from leash's own environment would let a
//! planted `.env` copy an exported secret into a model name or a base URL
//! (docs/src/configuration.md "Configuration"). That is why leash does not use dotenvy's
//! parser, which expands from the process environment.

/// A `.env` text that is not `NAME=value` lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct SyntaxError {
    /// 1-based line where the entry that failed starts.
    pub line: usize,
    /// What is wrong.
    pub problem: &'static str,
}

/// The `(name, value)` entries of a `.env` text, in file order (a name
/// may repeat; the caller decides which wins).
pub fn parse_entries(text: &str) -> Result<Vec<(String, String)>, SyntaxError> {
    let mut entries = Vec::new();
    let mut rest = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut line = 1;
    while !rest.is_empty() {
        let (entry, after, lines) =
            parse_line(rest).map_err(|problem| SyntaxError { line, problem })?;
        entries.extend(entry);
        line += lines;
        rest = after;
    }
    Ok(entries)
}

/// One logical line: its entry (none for a blank line or a comment), the
/// text after it, and how many lines it spanned.
type Parsed<'a> = (Option<(String, String)>, &'a str, usize);

fn parse_line(text: &str) -> Result<Parsed<'_>, &'static str> {
    let start = text.trim_start_matches([' ', '\t']);
    if start.is_empty() || start.starts_with(['\n', '\r', '#']) {
        let (_, after) = split_line(start);
        return Ok((None, after, 1));
    }
    let start = match start.strip_prefix("export") {
        Some(after) if after.starts_with([' ', '\t']) => after.trim_start_matches([' ', '\t']),
        _ => start,
    };
    let name_len = start
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(start.len());
    let name = &start[..name_len];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err("expected NAME=value (a name is letters, digits, _ and .)");
    }
    let after_name = start[name_len..].trim_start_matches([' ', '\t']);
    let Some(value_text) = after_name.strip_prefix('=') else {
        return Err("expected NAME=value: no '=' after the name");
    };
    let value_text = value_text.trim_start_matches([' ', '\t']);
    let (value, after, lines) = match value_text.chars().next() {
        Some(quote @ ('\'' | '"')) => quoted(&value_text[1..], quote)?,
        _ => {
            let (line, after) = split_line(value_text);
            (bare(line), after, 1)
        }
    };
    Ok((Some((name.to_owned(), value)), after, lines))
}

/// A bare value: up to the end of the line or a ` #` comment, trimmed.
fn bare(line: &str) -> String {
    let end = line
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || line[..i].ends_with([' ', '\t'])))
        .map_or(line.len(), |(i, _)| i);
    line[..end].trim_end_matches([' ', '\t']).to_owned()
}

/// A quoted value (the text after the opening quote): the value, the
/// text after its line, and the lines it spanned. Only blanks and a
/// comment may follow the closing quote on its line.
fn quoted(text: &str, quote: char) -> Result<(String, &str, usize), &'static str> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    let mut lines = 1;
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => {
                let (tail, after) = split_line(&text[i + 1..]);
                let tail = tail.trim_start_matches([' ', '\t']);
                if !(tail.is_empty() || tail.starts_with('#')) {
                    return Err("text after a closing quote");
                }
                return Ok((value, after, lines));
            }
            '\\' if quote == '"' => match chars.next().map(|(_, c)| c) {
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some('r') => value.push('\r'),
                Some(c @ ('"' | '\\' | '$' | '\'')) => value.push(c),
                Some(other) => {
                    value.push('\\');
                    value.push(other);
                    lines += usize::from(other == '\n');
                }
                None => break,
            },
            c => {
                value.push(c);
                lines += usize::from(c == '\n');
            }
        }
    }
    Err(match quote {
        '"' => "a double quote is never closed",
        _ => "a single quote is never closed",
    })
}

/// The text up to the end of the line (without `\r\n` or `\n`), and the
/// text after it.
fn split_line(text: &str) -> (&str, &str) {
    let (line, after) = text.split_once('\n').unwrap_or((text, ""));
    (line.strip_suffix('\r').unwrap_or(line), after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String)> {
        parse_entries(text).unwrap()
    }

    fn pair(name: &str, value: &str) -> (String, String) {
        (name.to_owned(), value.to_owned())
    }

    #[test]
    fn the_usual_forms_read_as_written() {
        let text = "# a comment\n\nA=1\nexport B = two words # note\r\nC='$HOME #x'\n\
                    D=\"line\\none \\\"q\\\" \\$HOME\"  # c\nE=\nF=a#b\n  G.x=g\n";
        assert_eq!(
            parse(text),
            [
                pair("A", "1"),
                pair("B", "two words"),
                pair("C", "$HOME #x"),
                pair("D", "line\none \"q\" $HOME"),
                pair("E", ""),
                pair("F", "a#b"),
                pair("G.x", "g"),
            ]
        );
    }

    #[test]
    fn nothing_is_expanded_from_the_environment() {
        // `PATH` is set in every test process; dotenvy would expand it.
        assert_eq!(
            parse("M=${PATH}\nN=\"$PATH\"\n"),
            [pair("M", "${PATH}"), pair("N", "$PATH")]
        );
    }

    #[test]
    fn quoted_values_may_span_lines_and_errors_name_the_line() {
        let text = "A=\"one\ntwo\"\nB='x\ny'\nC=3\n";
        assert_eq!(
            parse(text),
            [pair("A", "one\ntwo"), pair("B", "x\ny"), pair("C", "3")]
        );
        let error = |text: &str| parse_entries(text).unwrap_err();
        assert_eq!(error("A=1\nB=\"open\n\nC=2\n").line, 2);
        assert_eq!(error("A=1\nA=\"x\nx\"\nnot a line\n").line, 4);
        assert_eq!(
            error("=1").problem,
            "expected NAME=value (a name is letters, digits, _ and .)"
        );
        assert_eq!(
            error("A 1").problem,
            "expected NAME=value: no '=' after the name"
        );
        assert_eq!(error("A='x' y").problem, "text after a closing quote");
        assert_eq!(error("1A=x").line, 1);
        assert!(parse_entries("A=\"x\\").is_err());
    }

    #[test]
    fn export_alone_is_a_name() {
        assert_eq!(
            parse("export=1\nexportX=2\n"),
            [pair("export", "1"), pair("exportX", "2")]
        );
    }
}
