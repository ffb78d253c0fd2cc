//! What a function's environment takes, at most, in the 4 KB Lambda allows: the compact JSON
//! of its `Variables`, each value at its bound (a parameter's `MaxLength` times what its
//! `AllowedPattern` lets a character take, its allowed values or `MaxValue`; a resource's name
//! as AWS bounds it). `template.rs` holds the kit's template to it, `llm_template.rs` a
//! generated LLM project's.

// Test helpers may unwrap, as the tests do.
#![allow(clippy::unwrap_used)]

/// Lambda's limit on a function's environment: 4 KB of JSON.
pub(crate) const LIMIT: usize = 4096;
/// What AWS may add to a name we do not control the length of (a longer region name, a
/// partition), and JSON we may have counted short.
pub(crate) const MARGIN: usize = 96;

/// Parameters that name existing resources (the stack's own otherwise), for the cases that
/// give them.
const GIVEN: [(&str, &str); 9] = [
    ("PublicBaseUrl", "https://agent.example"),
    (
        "AgentCredentialsSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:c-AbCdEf",
    ),
    (
        "PushSigningKeySecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:p-AbCdEf",
    ),
    (
        "LiteChannelSecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:l-AbCdEf",
    ),
    (
        "ApiKeySecretArn",
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:k-AbCdEf",
    ),
    ("ExistingTableName", "a2a-restored"),
    (
        "ExistingTableStreamArn",
        "arn:aws:dynamodb:us-east-1:123456789012:table/a2a-restored/stream/2026-11-26T10:00:00.000",
    ),
    ("JwtIssuer", "https://issuer.example"),
    ("JwtAudience", "a2a"),
];

/// Each function's largest environment (by its role: the bytes, and the parameters of the
/// case), at every parameter's bound, in every case the kit's conditions make (each front
/// door, each auth mode, the stack's own secrets or yours), each with each of `variants`
/// (more parameters; `&[&[]]`: none), of the template at `template`. `None` without SAM.
pub(crate) fn largest(
    template: &std::path::Path,
    variants: &[&[(&str, &str)]],
) -> Option<std::collections::BTreeMap<String, (usize, String)>> {
    let mut largest = std::collections::BTreeMap::<String, (usize, String)>::new();
    for front_door in ["ApiGateway", "FunctionUrl"] {
        for auth in ["api-key", "jwt", "none"] {
            for own in [false, true] {
                for variant in variants {
                    let mut overrides = vec![
                        ("FrontDoor", front_door),
                        ("AuthMode", auth),
                        ("LiteChannels", "on"),
                    ];
                    if !own {
                        overrides.extend(GIVEN.iter().copied());
                    }
                    overrides.extend(variant.iter().copied());
                    let stack = super::created_from(template, &overrides)?;
                    for (_, f) in super::of_type(&stack, "AWS::Lambda::Function") {
                        let (role, bytes) = bound(&stack, f);
                        let entry = largest.entry(role).or_default();
                        if bytes > entry.0 {
                            *entry = (bytes, format!("{overrides:?}"));
                        }
                    }
                }
            }
        }
    }
    Some(largest)
}

/// Every function's largest environment fits in [`LIMIT`] with [`MARGIN`] to spare (each
/// printed, with its case).
pub(crate) fn assert_fits(largest: &std::collections::BTreeMap<String, (usize, String)>) {
    assert!(largest.contains_key("front") && largest.contains_key("worker"));
    for (role, (bytes, case)) in largest {
        eprintln!("{role}: up to {bytes} bytes of environment (JSON) in {case}");
    }
    for (role, (bytes, case)) in largest {
        assert!(
            bytes + MARGIN <= LIMIT,
            "{role}: up to {bytes} bytes of environment (JSON), {MARGIN} of margin, in {case}"
        );
    }
}

/// The role (`A2A_FUNCTION`) of `function`, a `AWS::Lambda::Function` of the translated
/// `stack`, and the most bytes its environment takes in compact JSON.
pub(crate) fn bound(stack: &serde_json::Value, function: &serde_json::Value) -> (String, usize) {
    let variables = function["Properties"]["Environment"]["Variables"]
        .as_object()
        .unwrap();
    let role = variables["A2A_FUNCTION"].as_str().unwrap().to_owned();
    // {"NAME":"value",...}: the braces, a comma between two, and each pair.
    let mut bytes = 2 + variables.len().saturating_sub(1);
    for (name, value) in variables {
        bytes += serde_json::to_string(name).unwrap().len() + 1 + json_bound(stack, value);
    }
    (role, bytes)
}

/// The most bytes `v`, a resolved value of the translated template, takes in compact JSON
/// (its quotes included).
pub(crate) fn json_bound(stack: &serde_json::Value, v: &serde_json::Value) -> usize {
    use serde_json::Value as J;
    match v {
        J::String(s) => serde_json::to_string(s).unwrap().len(),
        J::Number(n) => n.to_string().len() + 2,
        J::Bool(b) => b.to_string().len() + 2,
        J::Object(o) if o.contains_key("Fn::Sub") => {
            let text = o["Fn::Sub"].as_str().expect("a Fn::Sub string");
            let mut total = 2;
            let mut rest = text;
            while let Some(start) = rest.find("${") {
                total += serde_json::to_string(&rest[..start]).unwrap().len() - 2;
                let end = rest[start..].find('}').unwrap() + start;
                total += named_bound(stack, &rest[start + 2..end]);
                rest = &rest[end + 1..];
            }
            total + serde_json::to_string(rest).unwrap().len() - 2
        }
        other => {
            let name = super::target(other).unwrap_or_else(|| panic!("no bound for {other}"));
            2 + named_bound(stack, &name)
        }
    }
}

/// The most JSON bytes (quotes aside) of what `name` (`Param`, `Resource`, `Resource.Attr`,
/// `AWS::Region`) resolves to.
fn named_bound(stack: &serde_json::Value, name: &str) -> usize {
    // Upper bounds of what the resources and pseudo parameters put in the environment.
    let region = "ap-southeast-2".len() + 2;
    let url_suffix = "amazonaws.com.cn".len();
    let (name, attribute) = name.split_once('.').unwrap_or((name, ""));
    if let Some(p) = stack["Parameters"].get(name) {
        if let Some(values) = p.get("AllowedValues").and_then(|v| v.as_array()) {
            return values
                .iter()
                .map(|v| json_bound(stack, v) - 2)
                .max()
                .unwrap();
        }
        if let Some(max) = p.get("MaxLength") {
            let chars: usize = max.as_u64().map_or_else(
                || max.as_str().unwrap().parse().unwrap(),
                |n| usize::try_from(n).unwrap(),
            );
            return chars * json_bytes_per_char(p.get("AllowedPattern").and_then(|v| v.as_str()));
        }
        if let Some(max) = p.get("MaxValue") {
            return max.to_string().len().max(p["MinValue"].to_string().len());
        }
        panic!("parameter {name} has no bound (MaxLength, AllowedValues or MaxValue)");
    }
    match name {
        "AWS::Region" => return region,
        "AWS::URLSuffix" => return url_suffix,
        _ => {}
    }
    let resource = &stack["Resources"][name];
    match (resource["Type"].as_str(), attribute) {
        // https://sqs.<region>.amazonaws.com/<account>/<name of at most 80>
        (Some("AWS::SQS::Queue"), "") => {
            "https://sqs.".len() + region + 1 + url_suffix + 1 + 12 + 1 + 80
        }
        (Some("AWS::DynamoDB::Table"), "") => 255,
        // arn:<partition>:secretsmanager:<region>:<account>:secret:<stack name, 128, and a
        // suffix of ours>-<6 random>
        (Some("AWS::SecretsManager::Secret"), "") => {
            "arn:aws-us-gov:secretsmanager:".len()
                + region
                + 1
                + 12
                + ":secret:".len()
                + 128
                + "-push-signing-keys".len()
                + 7
        }
        // A REST API's id.
        (Some("AWS::ApiGateway::RestApi"), "") => 10,
        // https://<32>.lambda-url.<region>.on.aws/
        (Some("AWS::Lambda::Url"), "FunctionUrl") => {
            "https://".len() + 32 + ".lambda-url.".len() + region + ".on.aws/".len()
        }
        other => panic!("no bound for {name} ({other:?})"),
    }
}

/// The most bytes one character of a value matching `pattern` (a parameter's
/// `AllowedPattern`) takes in compact JSON, UTF-8: 1 for printable ASCII, 2 for `"` and `\`,
/// 6 for a control character (`\u0001`), 3 for any other (CloudFormation's `MaxLength` counts
/// UTF-16 units: a character beyond the BMP is two of them and four bytes). No pattern: 6.
/// Reads the patterns the template uses: literals, classes (ranges, `\s`, `\d`, `\w`, `\xHH`,
/// `\uHHHH`, negation), `.`, anchors, groups and quantifiers.
pub(crate) fn json_bytes_per_char(pattern: Option<&str>) -> usize {
    const ANY: (u32, u32) = (0, 0x10_FFFF);
    let Some(pattern) = pattern else {
        return 6;
    };
    let chars: Vec<char> = pattern.chars().collect();
    // An escape at chars[i] (after the backslash): the ranges it stands for, and its length.
    let escape = |i: usize| -> (Vec<(u32, u32)>, usize) {
        let hex = |from: usize, n: usize| {
            let digits: String = chars[from..from + n].iter().collect();
            u32::from_str_radix(&digits, 16).unwrap()
        };
        match chars[i] {
            's' => (vec![(9, 13), (32, 32)], 1),
            'd' => (vec![(48, 57)], 1),
            'w' => (vec![(48, 57), (65, 90), (95, 95), (97, 122)], 1),
            'S' | 'D' | 'W' => (vec![ANY], 1),
            'x' => {
                let c = hex(i + 1, 2);
                (vec![(c, c)], 3)
            }
            'u' => {
                let c = hex(i + 1, 4);
                (vec![(c, c)], 5)
            }
            c => (vec![(c as u32, c as u32)], 1),
        }
    };
    let mut admitted: Vec<(u32, u32)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let (ranges, len) = escape(i + 1);
                admitted.extend(ranges);
                i += 1 + len;
            }
            '.' => {
                admitted.push(ANY);
                i += 1;
            }
            '{' => i = i + chars[i..].iter().position(|&c| c == '}').unwrap() + 1,
            '^' | '$' | '|' | '(' | ')' | '?' | '*' | '+' => i += 1,
            '[' => {
                i += 1;
                let negated = chars[i] == '^';
                if negated {
                    i += 1;
                }
                let mut listed: Vec<(u32, u32)> = Vec::new();
                let mut first = true;
                while chars[i] != ']' || first {
                    first = false;
                    let (mut ranges, len) = if chars[i] == '\\' {
                        let (r, len) = escape(i + 1);
                        (r, len + 1)
                    } else {
                        (vec![(chars[i] as u32, chars[i] as u32)], 1)
                    };
                    i += len;
                    // A range: `a-b`, unless the `-` closes the class.
                    if chars[i] == '-' && chars[i + 1] != ']' && ranges.len() == 1 {
                        let (hi, len) = if chars[i + 1] == '\\' {
                            let (r, len) = escape(i + 2);
                            (r[0].1, len + 1)
                        } else {
                            (chars[i + 1] as u32, 1)
                        };
                        ranges[0].1 = hi;
                        i += 1 + len;
                    }
                    listed.extend(ranges);
                }
                i += 1;
                if negated {
                    listed.sort_unstable();
                    let mut from = 0;
                    for (lo, hi) in listed {
                        if lo > from {
                            admitted.push((from, lo - 1));
                        }
                        from = from.max(hi + 1);
                    }
                    if from <= ANY.1 {
                        admitted.push((from, ANY.1));
                    }
                } else {
                    admitted.extend(listed);
                }
            }
            c => {
                admitted.push((c as u32, c as u32));
                i += 1;
            }
        }
    }
    let overlaps = |lo: u32, hi: u32| admitted.iter().any(|&(a, b)| a <= hi && lo <= b);
    if overlaps(0, 0x1F) {
        6
    } else if overlaps(0x80, ANY.1) {
        3
    } else if overlaps(0x22, 0x22) || overlaps(0x5C, 0x5C) {
        2
    } else {
        1
    }
}
