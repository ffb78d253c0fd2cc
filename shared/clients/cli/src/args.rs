//! The positional arguments `[URL] ARG…`: the agent's URL first unless A2A_URL gives it. A
//! word that is not a URL where one may stand is most often a message of several words left
//! unquoted; the error says so, with the command as it should read.

use crate::Failure;

/// Where a URL must start (the card resolver and the bindings speak HTTP only).
const URL_FORM: &str = "http://… or https://…";

/// Whether `text` is an agent URL the command can use.
pub(crate) fn is_agent_url(text: &str) -> bool {
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// The agent URL from the environment.
fn env_url() -> Result<String, Failure> {
    let url = std::env::var("A2A_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| Failure::Usage("no agent URL: pass one or set A2A_URL".into()))?;
    if !is_agent_url(&url) {
        return Err(Failure::Usage(format!(
            "A2A_URL ({url:?}) is not an agent URL ({URL_FORM})"
        )));
    }
    Ok(url)
}

/// `url`, else A2A_URL, checked.
pub(crate) fn or_env(url: Option<String>) -> Result<String, Failure> {
    match url {
        Some(url) if !is_agent_url(&url) => Err(Failure::Usage(format!(
            "{url:?} is not an agent URL ({URL_FORM})"
        ))),
        Some(url) => Ok(url),
        None => env_url(),
    }
}

/// Splits the arguments of `a2a COMMAND [URL] NAMES…`: the URL, and one argument per name.
pub(crate) fn url_and(
    command: &str,
    args: &[String],
    names: &[&str],
) -> Result<(String, Vec<String>), Failure> {
    let n = names.len();
    let usage = format!("{command} takes [URL] {}", names.join(" "));
    let first_is_url = args.first().is_some_and(|a| is_agent_url(a));
    // A message of several words, unquoted: the one mistake worth showing the fix of.
    if names == ["TEXT"] && (args.len() > 2 || (args.len() == 2 && !first_is_url)) {
        let (url, words) = if first_is_url {
            (format!("{} ", args[0]), &args[1..])
        } else {
            (String::new(), args)
        };
        return Err(Failure::Usage(format!(
            "{usage}, the message as one argument: quote a message of several words, as in \
             a2a {command} {url}{:?}",
            words.join(" ")
        )));
    }
    match args.len() {
        len if len == n + 1 && !first_is_url => Err(Failure::Usage(format!(
            "{:?} is not an agent URL ({URL_FORM}): {usage}",
            args[0]
        ))),
        len if len == n + 1 => Ok((args[0].clone(), args[1..].to_vec())),
        len if len == n => Ok((env_url()?, args.to_vec())),
        _ => Err(Failure::Usage(usage)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn usage_error(result: Result<(String, Vec<String>), Failure>) -> String {
        match result {
            Err(Failure::Usage(message)) => message,
            other => panic!("not a usage error: {other:?}"),
        }
    }

    #[test]
    fn the_url_is_optional_before_positional_arguments() {
        let (url, rest) = url_and("get", &strings(&["http://a", "t1"]), &["TASK_ID"]).unwrap();
        assert_eq!((url.as_str(), rest), ("http://a", strings(&["t1"])));
        let (url, rest) = url_and("send", &strings(&["HTTPS://a", "hi"]), &["TEXT"]).unwrap();
        assert_eq!((url.as_str(), rest), ("HTTPS://a", strings(&["hi"])));
    }

    #[test]
    fn an_unquoted_message_is_shown_quoted() {
        let message = usage_error(url_and("send", &strings(&["hello", "world"]), &["TEXT"]));
        assert!(message.contains(r#"a2a send "hello world""#), "{message}");
        let message = usage_error(url_and(
            "send",
            &strings(&["http://a", "hello", "big", "world"]),
            &["TEXT"],
        ));
        assert!(
            message.contains(r#"a2a send http://a "hello big world""#),
            "{message}"
        );
    }

    #[test]
    fn a_word_where_the_url_stands_is_named() {
        let message = usage_error(url_and("get", &strings(&["abc", "t1"]), &["TASK_ID"]));
        assert!(
            message.starts_with(r#""abc" is not an agent URL"#),
            "{message}"
        );
        assert!(message.ends_with("get takes [URL] TASK_ID"), "{message}");
        assert!(or_env(Some("localhost:9000".into())).is_err());
    }
}
