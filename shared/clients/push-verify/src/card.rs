//! Agent card signatures (A2A §8.4): a JWS with a detached payload, the RFC 8785 canonical form
//! of the card without `signatures` ([`a2a_protocol::signing_payload`]), signed with a key of
//! the agent's JWKS named by the protected header's `kid`. A card verifies when at least one
//! of its signatures does (an agent signs with every key of a rotation).

use base64::Engine as _;
use jsonwebtoken::DecodingKey;

pub use jsonwebtoken::jwk::JwkSet;
pub use jsonwebtoken::Algorithm;

/// The algorithms a card signature is accepted with by default: those A2A agents sign with.
pub const CARD_ALGORITHMS: &[Algorithm] = &[
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::PS256,
    Algorithm::EdDSA,
];

use a2a_protocol::AgentCard;

/// The signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardSignature {
    /// The key that signed (its `kid`).
    pub kid: String,
    /// The algorithm.
    pub algorithm: Algorithm,
}

/// Why a card does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardSignatureError {
    /// The card carries no signature.
    #[error("the card is not signed")]
    Unsigned,
    /// The card has no canonical form (it nests too deeply).
    #[error("the card cannot be canonicalised: {0}")]
    Canonical(String),
    /// No signature verifies; the reasons, one per signature.
    #[error("no signature of the card verifies ({})", .0.join("; "))]
    Invalid(Vec<String>),
}

/// The protected header of a card signature, as far as verifying needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedHeader {
    /// The algorithm.
    pub alg: String,
    /// The key id.
    pub kid: Option<String>,
    /// Where the signer publishes its keys.
    pub jku: Option<String>,
}

/// The protected header of `protected` (base64url JSON), if it is one.
pub fn protected_header(protected: &str) -> Option<ProtectedHeader> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(protected.trim_end_matches('='))
        .ok()?;
    let header: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let text = |name: &str| header.get(name)?.as_str().map(str::to_string);
    Some(ProtectedHeader {
        alg: text("alg")?,
        kid: text("kid"),
        jku: text("jku"),
    })
}

/// Checks `card`'s signatures against `jwks`, accepting only `algorithms` (never `none` or
/// HMAC, whatever is passed: a public JWKS cannot hold an HMAC key).
pub fn verify_card(
    card: &AgentCard,
    jwks: &JwkSet,
    algorithms: &[Algorithm],
) -> Result<CardSignature, CardSignatureError> {
    if card.signatures.is_empty() {
        return Err(CardSignatureError::Unsigned);
    }
    let payload = a2a_protocol::signing_payload(card)
        .map_err(|e| CardSignatureError::Canonical(e.to_string()))?;
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.as_bytes());
    let mut reasons = Vec::new();
    for signature in &card.signatures {
        match verify_one(
            &signature.protected,
            &signature.signature,
            &payload,
            jwks,
            algorithms,
        ) {
            Ok(found) => return Ok(found),
            Err(reason) => reasons.push(reason),
        }
    }
    Err(CardSignatureError::Invalid(reasons))
}

fn verify_one(
    protected: &str,
    signature: &str,
    payload: &str,
    jwks: &JwkSet,
    algorithms: &[Algorithm],
) -> Result<CardSignature, String> {
    let header = protected_header(protected).ok_or("an unreadable protected header")?;
    let algorithm: Algorithm = header
        .alg
        .parse()
        .map_err(|_| format!("unknown algorithm {:?}", header.alg))?;
    let asymmetric = !matches!(
        algorithm,
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
    );
    if !asymmetric || !algorithms.contains(&algorithm) {
        return Err(format!("algorithm {} is not accepted", header.alg));
    }
    let kid = header.kid.ok_or("no kid")?;
    let jwk = jwks
        .find(&kid)
        .ok_or_else(|| format!("no published key {kid:?}"))?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("key {kid:?}: {:?}", e.kind()))?;
    let message = format!("{protected}.{payload}");
    match jsonwebtoken::crypto::verify(signature, message.as_bytes(), &key, algorithm) {
        Ok(true) => Ok(CardSignature { kid, algorithm }),
        Ok(false) => Err(format!("the signature by {kid:?} does not match the card")),
        Err(e) => Err(format!(
            "the signature by {kid:?} does not verify: {:?}",
            e.kind()
        )),
    }
}
