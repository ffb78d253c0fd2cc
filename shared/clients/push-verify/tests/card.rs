//! Agent card signatures: made by the server's key set (a2a-core), checked by this crate,
//! across a key rotation, and refused when anything signed changed.

// Test code may unwrap.
#![allow(clippy::unwrap_used)]

use a2a_core::{KeySet, SigningAlgorithm, SigningKey};
use a2a_protocol::{AgentCapabilities, AgentCard, AgentInterface, AgentSkill};
use a2a_push_verify::card::{verify_card, CardSignatureError, CARD_ALGORITHMS};

fn card() -> AgentCard {
    AgentCard {
        name: "Signed agent — ünïcode".into(),
        description: "A card to sign".into(),
        version: "1.2.3".into(),
        supported_interfaces: vec![AgentInterface {
            url: "https://agent.example/a2a/jsonrpc".into(),
            protocol_binding: "JSONRPC".into(),
            protocol_version: "1.0".into(),
            tenant: String::new(),
        }],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![AgentSkill {
            id: "echo".into(),
            name: "Echo".into(),
            description: "Echoes".into(),
            tags: vec!["demo".into()],
            ..AgentSkill::default()
        }],
        ..AgentCard::default()
    }
}

fn key(alg: SigningAlgorithm, kid: &str) -> (SigningKey, String) {
    let (_, pem) = SigningKey::generate(alg).unwrap();
    let pem = pem.expose().to_string();
    (
        SigningKey::from_pkcs8_pem(Some(kid), alg, &pem).unwrap(),
        pem,
    )
}

#[test]
fn a_signed_card_verifies_and_a_changed_one_does_not() {
    for alg in [SigningAlgorithm::Es256, SigningAlgorithm::Rs256] {
        let keys = KeySet::single(key(alg, "k1").0);
        let mut signed = card();
        signed.signatures = keys
            .sign_card(
                &signed,
                Some("https://agent.example/a2a/.well-known/jwks.json"),
            )
            .unwrap();
        assert_eq!(signed.signatures.len(), 1);
        let found = verify_card(&signed, &keys.jwks(), CARD_ALGORITHMS).unwrap();
        assert_eq!(found.kid, "k1");
        // The JSON as served parses back to a card that still verifies.
        let served: AgentCard =
            serde_json::from_str(&serde_json::to_string(&signed).unwrap()).unwrap();
        verify_card(&served, &keys.jwks(), CARD_ALGORITHMS).unwrap();

        for change in [
            |c: &mut AgentCard| c.description.push('!'),
            |c: &mut AgentCard| c.supported_interfaces[0].url = "https://attacker.example".into(),
            |c: &mut AgentCard| c.capabilities.push_notifications = Some(true),
            |c: &mut AgentCard| c.skills[0].tags.push("more".into()),
        ] {
            let mut changed = signed.clone();
            change(&mut changed);
            let err = verify_card(&changed, &keys.jwks(), CARD_ALGORITHMS).unwrap_err();
            assert!(matches!(err, CardSignatureError::Invalid(_)), "{err}");
        }
        // Only the listed algorithms, and only published keys.
        assert!(verify_card(&signed, &keys.jwks(), &[]).is_err());
        let other = KeySet::single(key(alg, "k1").0);
        assert!(verify_card(&signed, &other.jwks(), CARD_ALGORITHMS).is_err());
        let mut unsigned = signed.clone();
        unsigned.signatures.clear();
        assert_eq!(
            verify_card(&unsigned, &keys.jwks(), CARD_ALGORITHMS),
            Err(CardSignatureError::Unsigned)
        );
    }
}

#[test]
fn a_card_signed_during_a_rotation_verifies_with_either_key() {
    let (old, old_pem) = key(SigningAlgorithm::Es256, "2026-05");
    let (new, new_pem) = key(SigningAlgorithm::Es256, "2026-11");
    let rotated = KeySet::from_json(
        &serde_json::json!({"keys": [
            {"kid": "2026-05", "privateKeyPem": old_pem},
            {"kid": "2026-11", "privateKeyPem": new_pem, "active": true},
        ]})
        .to_string(),
    )
    .unwrap();
    let mut signed = card();
    signed.signatures = rotated.sign_card(&signed, None).unwrap();
    // One signature per key, the active key's first.
    assert_eq!(signed.signatures.len(), 2);
    // A verifier that cached the JWKS before the rotation (the old key only), and one that
    // fetched it after the old key was retired (the new key only): both accept the card.
    let only_old = KeySet::single(old).jwks();
    let only_new = KeySet::single(new).jwks();
    assert_eq!(
        verify_card(&signed, &only_old, CARD_ALGORITHMS)
            .unwrap()
            .kid,
        "2026-05"
    );
    assert_eq!(
        verify_card(&signed, &only_new, CARD_ALGORITHMS)
            .unwrap()
            .kid,
        "2026-11"
    );
}

#[test]
fn the_payload_is_the_canonical_card_without_signatures_and_empty_values() {
    let mut c = card();
    c.documentation_url = Some(String::new());
    let payload = a2a_protocol::signing_payload(&c).unwrap();
    assert!(
        payload.starts_with("{\"capabilities\":{\"pushNotifications\":false,\"streaming\":true}"),
        "{payload}"
    );
    assert!(!payload.contains("documentationUrl"), "{payload}");
    assert!(!payload.contains("signatures"), "{payload}");
    // Non-ASCII text is written as itself (RFC 8785), not escaped.
    assert!(payload.contains("ünïcode"), "{payload}");
}
