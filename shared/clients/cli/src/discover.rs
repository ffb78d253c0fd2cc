//! `a2a discover`: read the cards of many agents, cached on disk, and filter them.
//!
//! A cached card is used without a request while its `Cache-Control: max-age` lasts; after
//! that it is revalidated with `If-None-Match` (its `ETag`), and a `304` keeps it.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2a_client::{AgentCard, CardFetch, ClientBuilder, FetchedCard};
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::render::Printer;
use crate::{Failure, Outcome};

#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// Agent URLs (base URLs or card URLs).
    urls: Vec<String>,
    /// A registry: a JSON file holding a list of agent URLs.
    #[arg(long, value_name = "FILE")]
    registry: Option<PathBuf>,
    /// Only agents with this skill id.
    #[arg(long)]
    skill: Option<String>,
    /// Only agents with a skill tagged so.
    #[arg(long)]
    tag: Option<String>,
    /// Only agents that accept this input media type (by default or in a skill).
    #[arg(long, value_name = "MEDIA_TYPE")]
    input_mode: Option<String>,
    /// Where cards are cached (default: $XDG_CACHE_HOME/a2a/cards or ~/.cache/a2a/cards).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Fetch every card afresh (the cache is still updated).
    #[arg(long)]
    refresh: bool,
    /// Only agents whose card is signed and verifies against the agent's own JWKS (A2A §8.4);
    /// each card left out says why on stderr.
    #[arg(long)]
    require_signature: bool,
}

/// A card on disk, with what its response said about caching.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CachedCard {
    url: String,
    /// Where the card itself was read (its signature's keys are beside it).
    #[serde(default)]
    card_url: Option<String>,
    etag: Option<String>,
    /// Unix seconds until which the card is fresh.
    fresh_until: u64,
    card: AgentCard,
}

/// Where a card came from this time.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
enum Source {
    /// Fetched (first time, or changed).
    Network,
    /// From the cache, still fresh: no request.
    Cache,
    /// From the cache after a `304 Not Modified`.
    Revalidated,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("a2a").join("cards")
}

fn cache_file(dir: &Path, url: &str) -> PathBuf {
    let name = file_stem(url);
    dir.join(format!("{name}.json"))
}

/// A stable file name for a URL (FNV-1a, 64 bits, twice with different seeds).
fn file_stem(url: &str) -> String {
    let hash = |seed: u64| {
        url.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x8422_2325_cbf2_9ce4)
    )
}

fn read_cache(path: &Path) -> Option<CachedCard> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn write_cache(path: &Path, cached: &CachedCard) {
    // The cache is an optimisation: failing to write it must not fail the command.
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(bytes) = serde_json::to_vec(cached) {
        let _ = std::fs::write(path, bytes);
    }
}

/// When a card fetched now stops being fresh, in seconds since the epoch. The `max-age` is the
/// card server's: saturating, so a huge one means "fresh for ever", never an overflow.
fn fresh_until(max_age: Option<Duration>) -> u64 {
    now().saturating_add(max_age.map_or(0, |d| d.as_secs()))
}

/// The card of `url`, from the cache when it is fresh or still valid.
async fn card(
    resolver: &a2a_client::CardResolver,
    dir: &Path,
    url: &str,
    refresh: bool,
) -> Result<(FetchedCard, Source), a2a_client::Error> {
    let path = cache_file(dir, url);
    let cached = if refresh { None } else { read_cache(&path) };
    if let Some(cached) = &cached {
        if now() < cached.fresh_until {
            return Ok((from_cache(cached), Source::Cache));
        }
    }
    let etag = cached.as_ref().and_then(|c| c.etag.as_deref());
    match resolver.fetch(url, etag).await? {
        CardFetch::NotModified { max_age } => {
            let mut cached = cached.expect("a 304 answers a conditional request");
            cached.fresh_until = fresh_until(max_age);
            write_cache(&path, &cached);
            Ok((from_cache(&cached), Source::Revalidated))
        }
        CardFetch::Fetched(fetched) => {
            write_cache(
                &path,
                &CachedCard {
                    url: url.to_string(),
                    card_url: Some(fetched.url.clone()),
                    etag: fetched.etag.clone(),
                    fresh_until: fresh_until(fetched.max_age),
                    card: fetched.card.clone(),
                },
            );
            Ok((*fetched, Source::Network))
        }
    }
}

/// A cached card as fetched (a cache written before the card's own URL was kept: the
/// well-known URL of the agent's).
fn from_cache(cached: &CachedCard) -> FetchedCard {
    let card_url = cached.card_url.clone().unwrap_or_else(|| {
        a2a_client::card_urls(&cached.url)
            .ok()
            .and_then(|urls| urls.into_iter().next())
            .unwrap_or_else(|| cached.url.clone())
    });
    FetchedCard {
        card: cached.card.clone(),
        url: card_url,
        etag: cached.etag.clone(),
        max_age: None,
    }
}

impl DiscoverArgs {
    fn matches(&self, card: &AgentCard) -> bool {
        let skill = self
            .skill
            .as_ref()
            .is_none_or(|id| card.skills.iter().any(|s| &s.id == id));
        let tag = self
            .tag
            .as_ref()
            .is_none_or(|tag| card.skills.iter().any(|s| s.tags.contains(tag)));
        let input = self.input_mode.as_ref().is_none_or(|mode| {
            card.default_input_modes.contains(mode)
                || card.skills.iter().any(|s| s.input_modes.contains(mode))
        });
        skill && tag && input
    }
}

pub(crate) async fn run(builder: ClientBuilder, out: &Printer, args: DiscoverArgs) -> Outcome {
    let mut urls = args.urls.clone();
    if let Some(registry) = &args.registry {
        let bytes = std::fs::read(registry).map_err(|e| {
            Failure::Usage(format!(
                "cannot read the registry {}: {e}",
                registry.display()
            ))
        })?;
        let listed: Vec<String> = serde_json::from_slice(&bytes).map_err(|e| {
            Failure::Usage(format!(
                "{} is not a JSON list of agent URLs: {e}",
                registry.display()
            ))
        })?;
        urls.extend(listed);
    }
    if urls.is_empty() {
        if let Ok(url) = std::env::var("A2A_URL") {
            urls.push(url);
        }
    }
    if urls.is_empty() {
        return Err(Failure::Usage(
            "no agents: pass URLs, --registry FILE or set A2A_URL".into(),
        ));
    }
    let dir = args.cache_dir.clone().unwrap_or_else(default_cache_dir);
    let resolver = builder.card_resolver()?;
    let mut found = Vec::new();
    let mut failures = 0;
    for url in &urls {
        match card(&resolver, &dir, url, args.refresh).await {
            Ok((fetched, source)) => {
                if !args.matches(&fetched.card) {
                    continue;
                }
                if args.require_signature {
                    if let Err(e) = resolver.verify(&fetched).await {
                        eprintln!(
                            "{}: left out: {}",
                            crate::sanitize::line(url),
                            crate::error_text(&e.to_string())
                        );
                        continue;
                    }
                }
                found.push((url, fetched.card, source));
            }
            Err(e) => {
                failures += 1;
                eprintln!(
                    "{}: {}",
                    crate::sanitize::line(url),
                    crate::error_text(&e.to_string())
                );
            }
        }
    }
    if out.is_json() {
        let list: Vec<_> = found
            .iter()
            .map(|(url, card, source)| json!({"url": url, "source": source, "card": card}))
            .collect();
        out!("{}", crate::sanitize::json_pretty(&list));
    } else {
        use crate::sanitize::line;
        for (url, card, _) in &found {
            let skills: Vec<&str> = card.skills.iter().map(|s| s.id.as_str()).collect();
            out!(
                "{}  {}  skills: {}",
                line(&card.name),
                line(url),
                line(&skills.join(", "))
            );
        }
        out!("({} of {} agents match)", found.len(), urls.len());
    }
    if failures == urls.len() {
        return Err(Failure::Client(a2a_client::Error::Card(
            "no agent card could be read".into(),
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_max_age_is_fresh_for_ever_not_an_overflow() {
        assert_eq!(fresh_until(Some(Duration::from_secs(u64::MAX))), u64::MAX);
        assert!(fresh_until(Some(Duration::from_secs(60))) >= now() + 60);
    }
}
