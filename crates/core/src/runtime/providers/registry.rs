//! Which provider serves `provider/model`: built from the config once, then shared.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{BUILTIN_MODELS, BUILTIN_PROVIDER, Config, ModelCost, ModelInput, ProviderApi};

use super::retry::RetryPolicy;
use super::{Provider, anthropic, builtin, http, openai};

/// Default timeout of one model request when the provider sets none.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Everything needed to call one model.
#[derive(Clone)]
pub struct ModelTarget {
    pub provider: Arc<dyn Provider>,
    /// `provider/model`, as configured.
    pub reference: String,
    pub provider_id: String,
    /// The model id sent to the provider.
    pub model: String,
    pub retry: RetryPolicy,
    pub max_tokens: Option<u64>,
    pub context_window: Option<u64>,
    pub cost: Option<ModelCost>,
    /// Whether the model takes images.
    pub images: bool,
}

/// What the config says of one model: max tokens, context window, cost, input.
#[derive(Clone)]
struct ModelFacts {
    max_tokens: Option<u64>,
    context_window: Option<u64>,
    cost: Option<ModelCost>,
    images: bool,
}

impl Default for ModelFacts {
    fn default() -> Self {
        Self {
            max_tokens: None,
            context_window: None,
            cost: None,
            images: true,
        }
    }
}

struct Entry {
    provider: Arc<dyn Provider>,
    retry: RetryPolicy,
    /// Configured models; empty = any id.
    models: BTreeMap<String, ModelFacts>,
}

/// The configured providers plus `builtin`.
pub struct Providers {
    entries: BTreeMap<String, Entry>,
}

impl Providers {
    pub fn from_config(config: &Config) -> Result<Self, String> {
        let mut entries = BTreeMap::new();
        entries.insert(
            BUILTIN_PROVIDER.to_string(),
            Entry {
                provider: Arc::new(builtin::Builtin::new()),
                retry: RetryPolicy {
                    max_retries: 0,
                    ..RetryPolicy::default()
                },
                models: BUILTIN_MODELS
                    .iter()
                    .map(|m| {
                        let facts = ModelFacts {
                            images: false,
                            ..ModelFacts::default()
                        };
                        (m.to_string(), facts)
                    })
                    .collect(),
            },
        );
        for (id, p) in &config.models.providers {
            let timeout = p
                .timeout_seconds
                .map(Duration::from_secs)
                .unwrap_or(DEFAULT_REQUEST_TIMEOUT);
            let client =
                http::client(timeout).map_err(|e| format!("models.providers.{id}: {e}"))?;
            let provider: Arc<dyn Provider> = match p.api {
                ProviderApi::OpenAiCompletions => Arc::new(openai::OpenAi::new(id, p, client)),
                ProviderApi::AnthropicMessages => {
                    Arc::new(anthropic::Anthropic::new(id, p, client))
                }
            };
            let retry = RetryPolicy {
                max_retries: p.max_retries.unwrap_or(2).min(10) as u32,
                ..RetryPolicy::default()
            };
            let models = p
                .models
                .iter()
                .map(|m| {
                    (
                        m.id.clone(),
                        ModelFacts {
                            max_tokens: m.max_tokens,
                            context_window: m.context_window,
                            cost: m.cost.clone(),
                            images: m
                                .input
                                .as_ref()
                                .is_none_or(|input| input.contains(&ModelInput::Image)),
                        },
                    )
                })
                .collect();
            entries.insert(
                id.clone(),
                Entry {
                    provider,
                    retry,
                    models,
                },
            );
        }
        Ok(Self { entries })
    }

    /// The target of `provider/model`, or an error naming the models that exist.
    pub fn resolve(&self, reference: &str) -> Result<ModelTarget, String> {
        let unknown = || {
            format!(
                "unknown model {reference:?}; available: {}",
                self.available().join(", ")
            )
        };
        let (provider_id, model) = reference.split_once('/').ok_or_else(unknown)?;
        let provider_id = provider_id.to_lowercase();
        let entry = self.entries.get(&provider_id).ok_or_else(unknown)?;
        let facts = if entry.models.is_empty() {
            ModelFacts::default()
        } else {
            entry.models.get(model).cloned().ok_or_else(unknown)?
        };
        let ModelFacts {
            max_tokens,
            context_window,
            cost,
            images,
        } = facts;
        Ok(ModelTarget {
            provider: entry.provider.clone(),
            reference: format!("{provider_id}/{model}"),
            provider_id,
            model: model.to_string(),
            retry: entry.retry,
            max_tokens,
            context_window,
            cost,
            images,
        })
    }

    /// `provider/model` for every configured model (`provider/*` where any id is accepted).
    pub fn available(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (id, entry) in &self.entries {
            if entry.models.is_empty() {
                out.push(format!("{id}/*"));
            }
            out.extend(entry.models.keys().map(|m| format!("{id}/{m}")));
        }
        out
    }
}
