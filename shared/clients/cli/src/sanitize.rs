//! What an agent sent, made safe to show on a terminal.
//!
//! Anything an agent supplies (card fields, ids, status texts, artifact names and texts, file
//! names, error messages) may carry terminal control sequences: ESC/CSI/OSC (OSC 52 writes the
//! clipboard, OSC 8 forges links, CSI clears the screen), C1 controls, `\r` and backspace that
//! overwrite what was shown, and Unicode bidi controls that reorder it. Human output shows
//! each such character as a visible escape (`\x1b`, `\u{202e}`) instead of letting the terminal
//! interpret it. JSON output stays exact JSON: the same characters are written as `\uXXXX`
//! escapes, which every JSON reader decodes back to the same strings.

use std::borrow::Cow;
use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// Whether `c` must not reach a terminal as it is: C0 controls and DEL, C1 controls, the
/// bidi controls, line and paragraph separators, and invisible characters that can hide or
/// join text (zero-width spaces and joiners, word joiner, BOM, the tag characters).
fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}'
        | '\u{feff}'
        | '\u{e0000}'..='\u{e007f}')
}

/// `text` with every unsafe character escaped; `keep` names the characters kept as they are
/// (newlines and tabs in multi-line text).
fn escaped<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    if !text.chars().any(|c| is_unsafe(c) && !keep.contains(&c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) || keep.contains(&c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// A one-line field (an id, a name, a state, an error message): every unsafe character
/// escaped, newlines included.
pub(crate) fn line(text: &str) -> Cow<'_, str> {
    escaped(text, &[])
}

/// Multi-line text (a message's or an artifact's text): newlines and tabs kept, every other
/// unsafe character escaped.
pub(crate) fn text(text: &str) -> Cow<'_, str> {
    escaped(text, &['\n', '\t'])
}

/// A JSON formatter that writes the unsafe characters serde_json leaves as they are (DEL, C1,
/// bidi, invisible) as `\uXXXX` escapes; serde_json already escapes C0 controls.
struct Escaping<F>(F);

impl<F: Formatter> Formatter for Escaping<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if !is_unsafe(c) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = i + c.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

fn to_json(value: &impl Serialize, formatter: impl Formatter) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Escaping(formatter));
    if let Err(e) = value.serialize(&mut serializer) {
        return serde_json::json!({"error": format!("cannot print this value: {e}")}).to_string();
    }
    // The formatter writes whole UTF-8 characters and ASCII escapes only.
    String::from_utf8(out).unwrap_or_default()
}

/// `value` as one line of JSON, safe for a terminal.
pub(crate) fn json_line(value: &impl Serialize) -> String {
    to_json(value, CompactFormatter)
}

/// `value` as indented JSON, safe for a terminal.
pub(crate) fn json_pretty(value: &impl Serialize) -> String {
    to_json(value, PrettyFormatter::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// Every attack the issue lists, and what the terminal is shown instead.
    const CASES: &[(&str, &str)] = &[
        ("plain text, ünïcode, 漢字 ✓", "plain text, ünïcode, 漢字 ✓"),
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
        ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),
        (
            "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
            "\\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\",
        ),
        ("\u{9b}2J", "\\u{9b}2J"),
        ("\u{9d}52;c;x\u{9c}", "\\u{9d}52;c;x\\u{9c}"),
        ("done\rFAILED", "done\\x0dFAILED"),
        ("ok\x08\x08no", "ok\\x08\\x08no"),
        ("abc\u{202e}fdp.exe", "abc\\u{202e}fdp.exe"),
        ("\u{2066}x\u{2069}", "\\u{2066}x\\u{2069}"),
        ("a\u{200b}b\u{feff}", "a\\u{200b}b\\u{feff}"),
        ("tag\u{e0041}", "tag\\u{e0041}"),
        ("del\x7f", "del\\x7f"),
    ];

    #[test]
    fn control_and_bidi_characters_are_shown_not_interpreted() {
        for (input, shown) in CASES {
            assert_eq!(line(input), *shown, "{input:?}");
            assert_eq!(text(input), *shown, "{input:?}");
            assert!(!line(input).chars().any(is_unsafe), "{input:?}");
        }
        assert_eq!(line("two\nlines\t"), "two\\x0alines\\x09");
        assert_eq!(text("two\nlines\t"), "two\nlines\t");
    }

    #[test]
    fn every_unsafe_character_is_escaped_in_both_forms() {
        // Table-driven over the whole of each range, rather than a property test: the
        // workspace has no property testing crate, and the ranges are small.
        let ranges = [
            0u32..0x20,
            0x7f..0xa0,
            0x61c..0x61d,
            0x200b..0x2010,
            0x2028..0x202f,
            0x2060..0x206a,
            0xfeff..0xff00,
            0xe0000..0xe0080,
        ];
        for c in ranges.into_iter().flatten().filter_map(char::from_u32) {
            let input = format!("a{c}b");
            assert!(!line(&input).chars().any(is_unsafe), "{c:?}");
            if c != '\n' && c != '\t' {
                assert!(!text(&input).chars().any(is_unsafe), "{c:?}");
            }
            let json = json_line(&json!({ input.clone(): input.clone() }));
            assert!(!json.chars().any(is_unsafe), "{c:?}: {json}");
            let back: Value = serde_json::from_str(&json).expect("exact JSON");
            assert_eq!(back, json!({ input.clone(): input }), "{c:?}");
        }
        // Everything else passes as it is.
        for c in (0x20u32..0x7f).chain(0xa0..0x61c).chain(0x3000..0x3100) {
            let c = char::from_u32(c).expect("a char");
            let input = c.to_string();
            if c != '\\' {
                assert_eq!(line(&input), input, "{c:?}");
            }
        }
    }

    #[test]
    fn json_output_is_the_same_value() {
        let value = json!({"name": "x\x1b[2J\u{202e}\u{9b}", "n": [1, 2.5, null, true],
            "nested": {"k": "v\u{1F600}"}});
        for printed in [json_line(&value), json_pretty(&value)] {
            assert_eq!(
                serde_json::from_str::<Value>(&printed).expect("JSON"),
                value
            );
            // Pretty JSON has newlines of its own, between values.
            assert!(
                !printed.chars().any(|c| is_unsafe(c) && c != '\n'),
                "{printed}"
            );
            assert!(
                printed.contains("\\u202e") && printed.contains("\\u009b"),
                "{printed}"
            );
        }
        assert_eq!(json_line(&value), {
            let plain = serde_json::to_string(&value).expect("JSON");
            plain
                .replace('\u{202e}', "\\u202e")
                .replace('\u{9b}', "\\u009b")
        });
        assert!(json_pretty(&value).contains("\n  \"n\": ["));
    }
}
