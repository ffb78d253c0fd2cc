//! The agent card as 0.3 and early clients read it: the 1.0 card with the top-level fields
//! those versions look for, so one document serves every version.

use serde_json::{json, Map, Value};

/// The 0.3 version a 0.3 card declares at its top level (the 0.3 SDKs' default).
pub(super) const V03_CARD_PROTOCOL_VERSION: &str = "0.3.0";

/// Adds to a 1.0 card (ProtoJSON) what a 0.3 client reads: `url`, `preferredTransport`,
/// `protocolVersion`, `additionalInterfaces[{url, transport}]` (from the `supportedInterfaces`
/// entries with `protocolVersion` 0.3), `supportsAuthenticatedExtendedCard`, `security`
/// (`[{name: [scopes]}]`) and, inside each security scheme, the 0.3 spelling beside the 1.0
/// wrapper (`{"type": "apiKey", "in", "name"}`, `{"type": "http", "scheme"}`,
/// `{"type": "openIdConnect", "openIdConnectUrl"}`). 1.0 members stay as they are.
pub fn v03_card(card: Value) -> Value {
    let Value::Object(mut c) = card else {
        return card;
    };
    let interfaces: Vec<(String, String)> = c
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|i| {
            i.get("protocolVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.starts_with("0."))
        })
        .map(|i| {
            let s = |k: &str| {
                i.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            (s("url"), s("protocolBinding"))
        })
        .collect();
    if let Some((url, transport)) = interfaces.first() {
        c.insert("url".into(), url.clone().into());
        c.insert("preferredTransport".into(), transport.clone().into());
        let additional: Vec<Value> = interfaces
            .iter()
            .map(|(url, transport)| json!({ "url": url, "transport": transport }))
            .collect();
        c.insert("additionalInterfaces".into(), additional.into());
    }
    c.insert("protocolVersion".into(), V03_CARD_PROTOCOL_VERSION.into());
    let extended = c
        .get("capabilities")
        .and_then(|cap| cap.get("extendedAgentCard"))
        .cloned()
        .unwrap_or(Value::Bool(false));
    c.insert("supportsAuthenticatedExtendedCard".into(), extended);
    if let Some(Value::Array(requirements)) = c.get("securityRequirements") {
        let security: Vec<Value> = requirements
            .iter()
            .map(|r| {
                let mut out = Map::new();
                for (name, scopes) in r
                    .get("schemes")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    out.insert(
                        name.clone(),
                        scopes.get("list").cloned().unwrap_or(json!([])),
                    );
                }
                Value::Object(out)
            })
            .collect();
        c.insert("security".into(), security.into());
    }
    if let Some(Value::Object(schemes)) = c.get_mut("securitySchemes") {
        for scheme in schemes.values_mut() {
            add_v03_scheme(scheme);
        }
    }
    Value::Object(c)
}

/// Adds the 0.3 members of a 1.0 security scheme wrapper beside it.
fn add_v03_scheme(scheme: &mut Value) {
    let Some(obj) = scheme.as_object_mut() else {
        return;
    };
    let Some((wrapper, inner)) = obj.iter().next().map(|(k, v)| (k.clone(), v.clone())) else {
        return;
    };
    let get = |k: &str| inner.get(k).cloned();
    let mut add = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            obj.insert(k.into(), v);
        }
    };
    match wrapper.as_str() {
        "apiKeySecurityScheme" => {
            add("type", Some("apiKey".into()));
            add("in", get("location"));
            add("name", get("name"));
        }
        "httpAuthSecurityScheme" => {
            add("type", Some("http".into()));
            add("scheme", get("scheme"));
            add("bearerFormat", get("bearerFormat"));
        }
        "openIdConnectSecurityScheme" => {
            add("type", Some("openIdConnect".into()));
            add("openIdConnectUrl", get("openIdConnectUrl"));
        }
        "oauth2SecurityScheme" => {
            add("type", Some("oauth2".into()));
            add("flows", get("flows"));
        }
        "mtlsSecurityScheme" => add("type", Some("mutualTLS".into())),
        _ => return,
    }
    add("description", get("description"));
}

/// The card an early client reads at `/.well-known/agent.json`: the 0.3 card (its `url` is the
/// JSON-RPC endpoint) plus the early `authentication{schemes[]}` and
/// `capabilities.stateTransitionHistory`.
pub fn early_card(card: Value, jsonrpc_url: &str) -> Value {
    let mut card = v03_card(card);
    let Some(c) = card.as_object_mut() else {
        return card;
    };
    c.insert("url".into(), jsonrpc_url.into());
    let schemes: Vec<Value> = c
        .get("securitySchemes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(_, s)| match s.get("type").and_then(Value::as_str) {
            Some("http") => s.get("scheme").cloned(),
            Some(other) => Some(other.into()),
            None => None,
        })
        .collect();
    if !schemes.is_empty() {
        c.insert("authentication".into(), json!({ "schemes": schemes }));
    }
    if let Some(Value::Object(cap)) = c.get_mut("capabilities") {
        cap.entry("stateTransitionHistory")
            .or_insert(Value::Bool(false));
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card() -> Value {
        json!({
            "name": "a", "description": "d", "version": "1",
            "supportedInterfaces": [
                {"url": "http://h/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": "http://h", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                {"url": "http://h/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "http://h", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}
            ],
            "capabilities": {"streaming": true, "extendedAgentCard": true},
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
                "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": ["a2a:read"]}}}],
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
        })
    }

    #[test]
    fn the_03_card_names_the_03_interfaces_and_spells_security_twice() {
        let c = v03_card(card());
        assert_eq!(c["url"], "http://h/jsonrpc");
        assert_eq!(c["preferredTransport"], "JSONRPC");
        assert_eq!(c["protocolVersion"], "0.3.0");
        assert_eq!(
            c["additionalInterfaces"],
            json!([{"url": "http://h/jsonrpc", "transport": "JSONRPC"},
                   {"url": "http://h", "transport": "HTTP+JSON"}])
        );
        assert_eq!(c["supportsAuthenticatedExtendedCard"], true);
        assert_eq!(c["security"], json!([{"bearer": ["a2a:read"]}]));
        let bearer = &c["securitySchemes"]["bearer"];
        assert_eq!(bearer["type"], "http");
        assert_eq!(bearer["scheme"], "Bearer");
        assert_eq!(bearer["httpAuthSecurityScheme"]["scheme"], "Bearer");
        let key = &c["securitySchemes"]["apiKey"];
        assert_eq!(
            (&key["type"], &key["in"], &key["name"]),
            (&json!("apiKey"), &json!("header"), &json!("X-API-Key"))
        );
        // 1.0 members are untouched.
        assert_eq!(c["supportedInterfaces"], card()["supportedInterfaces"]);
    }

    #[test]
    fn the_early_card_has_the_endpoint_and_authentication_schemes() {
        let c = early_card(card(), "http://h/jsonrpc");
        assert_eq!(c["url"], "http://h/jsonrpc");
        assert_eq!(c["authentication"]["schemes"], json!(["apiKey", "Bearer"]));
        assert_eq!(c["capabilities"]["stateTransitionHistory"], false);
    }
}
