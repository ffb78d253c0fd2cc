//! A peer's text as a room message may quote it: what the codec's refusals, the states' and
//! the renderings' words share, below them all.

/// The longest piece of a peer's text a reply quotes, in characters ([`quote`]).
pub const MAX_QUOTE_CHARS: usize = 64;

/// A peer's text as a reply quotes it: in double quotes, at most [`MAX_QUOTE_CHARS`]
/// characters (then `…`), escaped so that it can say nothing of its own in the room: line
/// breaks, control and invisible characters as `\n`, `\u{…}` (it cannot start a line: a marker
/// or an attachment line), and `@`, `<`, `>` as `\u{40}`, `\u{3c}`, `\u{3e}` (it mentions no
/// one: `@room`, `@channel`, Slack's `<!channel>`).
pub fn quote(text: &str) -> String {
    let mut out = String::from('"');
    for (i, c) in text.chars().enumerate() {
        if i == MAX_QUOTE_CHARS {
            out.push('…');
            break;
        }
        match c {
            '@' | '<' | '>' => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.extend(c.escape_debug()),
        }
    }
    out.push('"');
    out
}
