//! The agent cards as served: signed (spec §8.4) with the deployment's signing keys, the same
//! keys that sign pushes and that the JWKS publishes. A card is signed again only when the key
//! set changes (a rotation reaches a running instance through [`crate::SigningKeys`]), so a
//! request costs a pointer comparison.

use std::sync::{Arc, Mutex};

use a2a_protocol::AgentCard;

use crate::signing::{KeySet, PushSigner};

/// The public and the extended card with their signatures.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedCards {
    /// The public card.
    pub card: AgentCard,
    /// The extended card (the public card plus the extended skills), signed on its own.
    pub extended_card: AgentCard,
}

/// Signs the cards on first use and again after each key rotation.
pub(crate) struct CardSigner {
    unsigned: Arc<SignedCards>,
    cache: Mutex<Option<(Arc<KeySet>, Arc<SignedCards>)>>,
}

impl CardSigner {
    pub(crate) fn new(card: AgentCard, extended_card: AgentCard) -> Self {
        Self {
            unsigned: Arc::new(SignedCards {
                card,
                extended_card,
            }),
            cache: Mutex::new(None),
        }
    }

    /// The cards signed with `signer`'s current keys. Without a signer, or without keys (a
    /// Lambda card function before the push function generated the first key; a broken key
    /// set), the cards go out unsigned: the card must stay up, and the warning says why.
    pub(crate) async fn current(&self, signer: Option<&PushSigner>) -> Arc<SignedCards> {
        let Some(signer) = signer else {
            return self.unsigned.clone();
        };
        let keys = match signer.keys().await {
            Ok(keys) => keys,
            Err(err) => {
                tracing::warn!(error = %err, "no signing keys: serving the agent card unsigned");
                return self.unsigned.clone();
            }
        };
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((set, cards)) = cache.as_ref() {
            if Arc::ptr_eq(set, &keys) {
                return cards.clone();
            }
        }
        let jku = format!("{}{}", signer.issuer(), a2a_protocol::push::JWKS_PATH);
        let sign = |card: &AgentCard| -> Result<AgentCard, crate::signing::KeyError> {
            let mut signed = card.clone();
            signed.signatures = keys.sign_card(card, Some(&jku))?;
            Ok(signed)
        };
        let signed = match (
            sign(&self.unsigned.card),
            sign(&self.unsigned.extended_card),
        ) {
            (Ok(card), Ok(extended_card)) => Arc::new(SignedCards {
                card,
                extended_card,
            }),
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!(error = %err, "cannot sign the agent card: serving it unsigned");
                return self.unsigned.clone();
            }
        };
        *cache = Some((keys, signed.clone()));
        signed
    }
}
