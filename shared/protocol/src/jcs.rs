//! RFC 8785 JSON Canonicalization Scheme (JCS): the one byte string a JSON value signs as.
//! Agent card signatures (spec §8.4) are made over it.
//!
//! Objects have their members sorted by the UTF-16 code units of their names, strings escape
//! only what JSON requires (`"`, `\`, the C0 controls: RFC 8785 §3.2.2.2), numbers are written
//! as ECMAScript's `Number.prototype.toString` writes an IEEE 754 double (§3.2.2.3), and there
//! is no whitespace.

use std::fmt::Write as _;

use serde_json::Value;

/// How deep objects and arrays may nest: deeper than any card, shallow enough that a hostile
/// document cannot exhaust the stack (an extension's `params` is free JSON).
pub const MAX_DEPTH: usize = 128;

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JcsError {
    /// Objects or arrays nest deeper than [`MAX_DEPTH`].
    #[error("JSON nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// The canonical form of `value` (its UTF-8 bytes are what is signed).
pub fn canonicalize(value: &Value) -> Result<String, JcsError> {
    let mut out = String::new();
    write_value(value, &mut out, 1)?;
    Ok(out)
}

fn write_value(value: &Value, out: &mut String, depth: usize) -> Result<(), JcsError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            // Integers a double holds exactly are written as they are; others as the double
            // they stand for, as ECMAScript would read them.
            (Some(i), _) if i.unsigned_abs() <= MAX_SAFE_INTEGER => {
                let _ = write!(out, "{i}");
            }
            (_, Some(u)) if u <= MAX_SAFE_INTEGER => {
                let _ = write!(out, "{u}");
            }
            _ => write_number(n.as_f64().unwrap_or_default(), out),
        },
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(JcsError::TooDeep);
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            if depth > MAX_DEPTH {
                return Err(JcsError::TooDeep);
            }
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            // UTF-16 code units, not code points: they differ above the BMP (RFC 8785 §3.2.3).
            sorted.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write_value(member, out, depth + 1)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// 2^53: beyond it a double no longer holds every integer.
const MAX_SAFE_INTEGER: u64 = 1 << 53;

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMA-262 `Number::toString(x)` for a finite double (JSON has no other).
fn write_number(x: f64, out: &mut String) {
    if x == 0.0 || !x.is_finite() {
        // -0 is written 0; JSON cannot carry NaN or infinities, so they do not reach here.
        out.push('0');
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` gives the fewest digits that read back as the same double, as ECMAScript
    // requires; where several such digit strings exist, ECMAScript takes the one closest to
    // the double, which is the double correctly rounded to that many digits.
    let shortest = format!("{:e}", x.abs());
    let digits = shortest
        .split_once('e')
        .map_or(0, |(m, _)| m.chars().filter(char::is_ascii_digit).count());
    let sci = format!("{:.*e}", digits.saturating_sub(1), x.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    // The value is 0.<digits> × 10^n.
    let n = exponent.parse::<i64>().unwrap_or_default() + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n - 1;
        let _ = write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(text: &str) -> String {
        canonicalize(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn the_rfc_example_canonicalizes_exactly() {
        // RFC 8785 §3.2.4 (the input of §3.2.2 and its output).
        let input = r#"{
            "numbers": [],
            "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
            "literals": [null, true, false]
        }"#;
        let mut value: Value = serde_json::from_str(input).unwrap();
        // As double literals: serde_json's own float parsing is not exact without a feature
        // this workspace does not turn on, and exact reading is not what is tested here.
        // The RFC's own literal, more digits than a double holds: that is the point.
        #[allow(clippy::excessive_precision)]
        let rfc_third = 333_333_333.333_333_29_f64;
        value["numbers"] = serde_json::json!([
            rfc_third,
            1E30_f64,
            4.50_f64,
            2e-3_f64,
            0.000_000_000_000_000_000_000_000_001_f64
        ]);
        assert_eq!(
            canonicalize(&value).unwrap(),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
             \"string\":\"\u{20ac}$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
        );
    }

    #[test]
    fn members_sort_by_utf16_code_units() {
        // RFC 8785 §3.2.3: the emoji (a surrogate pair, D83D…) sorts before U+FB33, although
        // its code point is larger.
        let input = r#"{
            "\u20ac": "Euro Sign",
            "\r": "Carriage Return",
            "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\ud83d\ude00": "Emoji: Grinning Face",
            "\u0080": "Control",
            "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let value: serde_json::Value = serde_json::from_str(input).unwrap();
        let out = canonicalize(&value).unwrap();
        let names: Vec<String> = out
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .map(|m| m.split(':').next().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "\"\\r\"",
                "\"1\"",
                "\"\u{80}\"",
                "\"\u{f6}\"",
                "\"\u{20ac}\"",
                "\"\u{1f600}\"",
                "\"\u{fb33}\""
            ]
        );
    }

    #[test]
    fn numbers_follow_ecmascript() {
        // RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
        for (bits, text) in [
            (0x0000_0000_0000_0000_u64, "0"),
            (0x8000_0000_0000_0000, "0"),
            (0x0000_0000_0000_0001, "5e-324"),
            (0x8000_0000_0000_0001, "-5e-324"),
            (0x7fef_ffff_ffff_ffff, "1.7976931348623157e+308"),
            (0xffef_ffff_ffff_ffff, "-1.7976931348623157e+308"),
            (0x4340_0000_0000_0000, "9007199254740992"),
            (0xc340_0000_0000_0000, "-9007199254740992"),
            (0x4430_0000_0000_0000, "295147905179352830000"),
            (0x44b5_2d02_c7e1_4af5, "9.999999999999997e+22"),
            (0x44b5_2d02_c7e1_4af6, "1e+23"),
            (0x44b5_2d02_c7e1_4af7, "1.0000000000000001e+23"),
            (0x444b_1ae4_d6e2_ef4e, "999999999999999700000"),
            (0x444b_1ae4_d6e2_ef4f, "999999999999999900000"),
            (0x444b_1ae4_d6e2_ef50, "1e+21"),
            (0x3eb0_c6f7_a0b5_ed8c, "9.999999999999997e-7"),
            (0x3eb0_c6f7_a0b5_ed8d, "0.000001"),
            (0x41b3_de43_5555_5553, "333333333.3333332"),
            (0x41b3_de43_5555_5554, "333333333.33333325"),
            (0x41b3_de43_5555_5555, "333333333.3333333"),
            (0x41b3_de43_5555_5556, "333333333.3333334"),
            (0x41b3_de43_5555_5557, "333333333.33333343"),
            (0xbecb_f647_612f_3696, "-0.0000033333333333333333"),
            (0x4314_3ff3_c1cb_0959, "1424953923781206.2"),
        ] {
            let mut out = String::new();
            write_number(f64::from_bits(bits), &mut out);
            assert_eq!(out, text, "{bits:#018x}");
        }
        assert_eq!(
            canonical("[1, -7, 1.0, 100, 1e2, 12345678901234567890]"),
            "[1,-7,1,100,100,12345678901234567000]"
        );
    }

    #[test]
    fn strings_escape_only_what_json_requires() {
        assert_eq!(
            canonical(r#""\u0001\u001f\u007f é \ud83d\ude00 \/""#),
            "\"\\u0001\\u001f\u{7f} \u{e9} \u{1f600} /\""
        );
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut value = Value::Null;
        for _ in 0..=MAX_DEPTH {
            value = Value::Array(vec![value]);
        }
        assert_eq!(canonicalize(&value), Err(JcsError::TooDeep));
    }
}
