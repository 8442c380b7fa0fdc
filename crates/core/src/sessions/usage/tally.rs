//! Counting a window's messages: each assistant message is one model call with its tokens,
//! price, model and tool calls; every message counts by role. A [`Tally`] sums them in the cuts
//! the answers show.

use std::collections::BTreeMap;

use serde::Deserialize;
use switchboard_protocol::usage::{
    CostTotals, DailyCost, DailyUsage, MessageCounts, ModelDaily, ModelUsage, ToolCount, ToolUsage,
};

/// What a usage read takes of an assistant message.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Reply {
    provider: String,
    model: String,
    usage: ReplyUsage,
    content: Vec<Block>,
    stop_reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ReplyUsage {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    total_tokens: u64,
    /// The price of the call when the model had prices (`total` and its parts, USD).
    cost: Option<ReplyCost>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ReplyCost {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
    total: f64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    name: String,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Call {
    pub provider: String,
    pub model: String,
    pub totals: CostTotals,
    pub tools: Vec<String>,
    pub error: bool,
}

impl Call {
    /// The call an assistant message's JSON records; `None` when it is not readable, or when no
    /// model wrote it (`chat.inject`, the gateway's notices: provider `switchboard`). The
    /// built-in models cost nothing: their calls are priced at 0.
    pub(crate) fn of(body: &str) -> Option<Self> {
        Self::from_reply(serde_json::from_str(body).ok()?)
    }

    /// [`Call::of`] a message already decoded.
    pub(crate) fn of_value(message: &serde_json::Value) -> Option<Self> {
        Self::from_reply(Reply::deserialize(message).ok()?)
    }

    fn from_reply(reply: Reply) -> Option<Self> {
        if reply.provider == "switchboard" {
            return None;
        }
        let u = &reply.usage;
        let mut totals = CostTotals {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            total_tokens: u
                .total_tokens
                .max(u.input + u.output + u.cache_read + u.cache_write),
            ..CostTotals::default()
        };
        match &u.cost {
            Some(c) => {
                totals.total_cost = c.total;
                totals.input_cost = c.input;
                totals.output_cost = c.output;
                totals.cache_read_cost = c.cache_read;
                totals.cache_write_cost = c.cache_write;
            }
            None if totals.total_tokens > 0 && reply.provider != "builtin" => {
                totals.missing_cost_entries = 1;
            }
            None => {}
        }
        let tools = reply
            .content
            .into_iter()
            .filter(|b| b.kind == "toolCall")
            .map(|b| b.name)
            .collect();
        Some(Self {
            provider: reply.provider,
            model: reply.model,
            totals,
            tools,
            error: reply.stop_reason == "error",
        })
    }
}

/// One day's sums.
#[derive(Debug, Clone, Default)]
struct Day {
    totals: CostTotals,
    messages: u64,
    tool_calls: u64,
    errors: u64,
}

/// The sums of some messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub totals: CostTotals,
    pub messages: MessageCounts,
    pub first: Option<i64>,
    pub last: Option<i64>,
    tools: BTreeMap<String, u64>,
    /// By (provider, model): calls and sums.
    models: BTreeMap<(String, String), (u64, CostTotals)>,
    days: BTreeMap<String, Day>,
    /// By (date, provider, model): calls and sums.
    model_days: BTreeMap<(String, String, String), (u64, CostTotals)>,
}

impl Tally {
    /// Counts a message of `role` written at `ts` on `date`, with its model call if it is an
    /// assistant's.
    pub(crate) fn add(&mut self, role: &str, ts: i64, date: &str, call: Option<&Call>) {
        self.first = Some(self.first.map_or(ts, |f| f.min(ts)));
        self.last = Some(self.last.map_or(ts, |l| l.max(ts)));
        let day = self.days.entry(date.to_string()).or_default();
        day.messages += 1;
        self.messages.total += 1;
        match role {
            "user" => self.messages.user += 1,
            "toolResult" => self.messages.tool_results += 1,
            "assistant" => self.messages.assistant += 1,
            _ => {}
        }
        let Some(call) = call else { return };
        let tools = call.tools.len() as u64;
        self.messages.tool_calls += tools;
        day.tool_calls += tools;
        if call.error {
            self.messages.errors += 1;
            day.errors += 1;
        }
        day.totals.add(&call.totals);
        self.totals.add(&call.totals);
        for tool in &call.tools {
            *self.tools.entry(tool.clone()).or_default() += 1;
        }
        let model = self
            .models
            .entry((call.provider.clone(), call.model.clone()))
            .or_default();
        model.0 += 1;
        model.1.add(&call.totals);
        let key = (date.to_string(), call.provider.clone(), call.model.clone());
        let model_day = self.model_days.entry(key).or_default();
        model_day.0 += 1;
        model_day.1.add(&call.totals);
    }

    /// The tools called, most used first.
    pub(crate) fn tool_usage(&self) -> ToolUsage {
        let mut tools: Vec<ToolCount> = self
            .tools
            .iter()
            .map(|(name, count)| ToolCount {
                name: name.clone(),
                count: *count,
            })
            .collect();
        tools.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
        ToolUsage {
            total_calls: tools.iter().map(|t| t.count).sum(),
            unique_tools: tools.len() as u64,
            tools,
        }
    }

    /// The calls by model, most tokens first.
    pub(crate) fn by_model(&self) -> Vec<ModelUsage> {
        let rows = self
            .models
            .iter()
            .map(|((provider, model), (count, totals))| {
                usage_row(provider, Some(model), *count, totals)
            });
        busiest(rows.collect())
    }

    /// The calls by provider, most tokens first.
    pub(crate) fn by_provider(&self) -> Vec<ModelUsage> {
        let mut providers: BTreeMap<&str, (u64, CostTotals)> = BTreeMap::new();
        for ((provider, _), (count, totals)) in &self.models {
            let sum = providers.entry(provider).or_default();
            sum.0 += count;
            sum.1.add(totals);
        }
        let rows = providers
            .into_iter()
            .map(|(provider, (count, totals))| usage_row(provider, None, count, &totals));
        busiest(rows.collect())
    }

    /// The days with messages, in order, each with its sums.
    pub(crate) fn cost_daily(&self) -> Vec<DailyCost> {
        (self.days.iter())
            .map(|(date, day)| DailyCost {
                date: date.clone(),
                totals: day.totals,
            })
            .collect()
    }

    /// The days with messages at a glance.
    pub(crate) fn daily(&self) -> Vec<DailyUsage> {
        (self.days.iter())
            .map(|(date, day)| DailyUsage {
                date: date.clone(),
                tokens: day.totals.total_tokens,
                cost: day.totals.total_cost,
                messages: day.messages,
                tool_calls: day.tool_calls,
                errors: day.errors,
            })
            .collect()
    }

    /// Each model's calls on each day.
    pub(crate) fn model_daily(&self) -> Vec<ModelDaily> {
        (self.model_days.iter())
            .map(|((date, provider, model), (count, totals))| ModelDaily {
                date: date.clone(),
                provider: provider.clone(),
                model: model.clone(),
                tokens: totals.total_tokens,
                cost: totals.total_cost,
                count: *count,
            })
            .collect()
    }

    /// The dates with messages.
    pub(crate) fn dates(&self) -> Vec<String> {
        self.days.keys().cloned().collect()
    }

    /// The sums per `provider/model`.
    pub(crate) fn per_model_ref(&self) -> BTreeMap<String, CostTotals> {
        let mut out: BTreeMap<String, CostTotals> = BTreeMap::new();
        for ((provider, model), (_, totals)) in &self.models {
            out.entry(format!("{provider}/{model}"))
                .or_default()
                .add(totals);
        }
        out
    }
}

fn usage_row(provider: &str, model: Option<&str>, count: u64, totals: &CostTotals) -> ModelUsage {
    ModelUsage {
        provider: provider.to_string(),
        model: model.map(str::to_string),
        count,
        totals: *totals,
    }
}

/// `rows`, most tokens first.
fn busiest(mut rows: Vec<ModelUsage>) -> Vec<ModelUsage> {
    rows.sort_by_key(|r| std::cmp::Reverse(r.totals.total_tokens));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_read_from_an_assistant_message() {
        let body = r#"{"role":"assistant","provider":"mock","model":"m1","stopReason":"toolUse",
            "content":[{"type":"text","text":"x"},{"type":"toolCall","id":"1","name":"read","arguments":{}}],
            "usage":{"input":10,"output":5,"cacheRead":2,"cacheWrite":0,"totalTokens":17,
                     "cost":{"input":0.1,"output":0.2,"cacheRead":0.01,"cacheWrite":0,"total":0.31}}}"#;
        let call = Call::of(body).unwrap();
        assert_eq!(
            (call.provider.as_str(), call.model.as_str()),
            ("mock", "m1")
        );
        assert_eq!(call.tools, ["read"]);
        assert_eq!(
            (call.totals.total_tokens, call.totals.total_cost),
            (17, 0.31)
        );
        assert_eq!(call.totals.missing_cost_entries, 0);
        let unpriced =
            Call::of(r#"{"usage":{"input":3,"output":4},"stopReason":"error"}"#).unwrap();
        assert_eq!(unpriced.totals.missing_cost_entries, 1);
        assert_eq!(unpriced.totals.total_tokens, 7);
        assert!(unpriced.error);
        assert_eq!(Call::of("not json"), None);
        let injected = r#"{"provider":"switchboard","model":"inject","content":[{"type":"text","text":"hi"}]}"#;
        assert_eq!(Call::of(injected), None, "no model call");
        let free = Call::of(r#"{"provider":"builtin","usage":{"input":3,"output":4}}"#).unwrap();
        assert_eq!(free.totals.missing_cost_entries, 0);
    }

    #[test]
    fn a_tally_sums_by_day_model_provider_and_tool() {
        let call = |provider: &str, model: &str, tokens: u64, tools: &[&str]| Call {
            provider: provider.into(),
            model: model.into(),
            totals: CostTotals {
                input: tokens,
                total_tokens: tokens,
                total_cost: tokens as f64 / 100.0,
                ..CostTotals::default()
            },
            tools: tools.iter().map(|t| t.to_string()).collect(),
            error: false,
        };
        let mut t = Tally::default();
        t.add("user", 5, "2026-11-28", None);
        t.add(
            "assistant",
            6,
            "2026-11-28",
            Some(&call("a", "x", 10, &["read", "exec"])),
        );
        t.add("toolResult", 7, "2026-11-28", None);
        t.add(
            "assistant",
            9,
            "2026-11-29",
            Some(&call("a", "y", 30, &["read"])),
        );
        t.add("assistant", 8, "2026-11-29", Some(&call("b", "z", 5, &[])));
        assert_eq!(t.totals.total_tokens, 45);
        assert_eq!((t.first, t.last), (Some(5), Some(9)));
        let m = t.messages;
        assert_eq!(
            (m.total, m.user, m.assistant, m.tool_results, m.tool_calls),
            (5, 1, 3, 1, 3)
        );
        let tools = t.tool_usage();
        assert_eq!((tools.total_calls, tools.unique_tools), (3, 2));
        assert_eq!(
            (tools.tools[0].name.as_str(), tools.tools[0].count),
            ("read", 2)
        );
        let models: Vec<_> = t.by_model().into_iter().map(|m| m.model.unwrap()).collect();
        assert_eq!(models, ["y", "x", "z"]);
        let providers = t.by_provider();
        assert_eq!(
            (providers[0].provider.as_str(), providers[0].count),
            ("a", 2)
        );
        assert_eq!(providers[0].model, None);
        let daily = t.daily();
        assert_eq!(
            (daily[1].date.as_str(), daily[1].tokens, daily[1].messages),
            ("2026-11-29", 35, 2)
        );
        assert_eq!(t.cost_daily()[0].totals.total_tokens, 10);
        assert_eq!(t.model_daily().len(), 3);
        assert_eq!(t.per_model_ref()["a/y"].total_tokens, 30);
    }
}
