//! The figures: one JSON line per block (`--out`), then per (workload, target) over all rounds
//! p50/p99 latency, ops, errors and CPU per op, each beside the floor's, as JSON lines and as a
//! markdown table on stdout.

use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::{Value, json};

use super::target::FLOOR;
use super::workload::{Block, Workload};

/// Nearest-rank percentile (the kit's definition); `None` for no samples.
fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.max(1) - 1).copied()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One block as a JSON line.
pub fn block_line(block: &Block) -> Value {
    let mut sorted = block.latencies_ms.clone();
    sorted.sort_by(f64::total_cmp);
    json!({
        "round": block.round, "key": block.workload.key(), "workload": block.workload.name(), "target": block.target,
        "ops": block.latencies_ms.len(), "errors": block.errors, "firstError": block.first_error,
        "p50Ms": percentile(&sorted, 0.5).map(round3), "p99Ms": percentile(&sorted, 0.99).map(round3),
        "wallMs": round3(block.wall_ms), "cpuMs": block.cpu_ms.map(round3),
        "announcedMs": block.announced_ms.map(round3),
    })
}

/// Every round's blocks of one workload on one target, summed up.
pub struct Summary {
    pub workload: Workload,
    pub target: String,
    pub ops: usize,
    pub errors: usize,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub cpu_per_op: Option<f64>,
    /// `parallel`: turns a second over the blocks' wall time; `spawn`: the median time until all
    /// announced.
    pub extra: Option<f64>,
}

pub fn summarise(blocks: &[Block], workload: Workload, target: &str) -> Summary {
    let mine: Vec<&Block> = blocks
        .iter()
        .filter(|b| b.workload == workload && b.target == target)
        .collect();
    let mut sorted: Vec<f64> = mine.iter().flat_map(|b| b.latencies_ms.clone()).collect();
    sorted.sort_by(f64::total_cmp);
    let ops = sorted.len();
    let cpu: Option<f64> = mine.iter().map(|b| b.cpu_ms).sum();
    let wall: f64 = mine.iter().map(|b| b.wall_ms).sum();
    let extra = match workload {
        Workload::Parallel if wall > 0.0 => Some(ops as f64 * 1000.0 / wall),
        Workload::Spawn => {
            let mut all: Vec<f64> = mine.iter().filter_map(|b| b.announced_ms).collect();
            all.sort_by(f64::total_cmp);
            (all.len() == mine.len())
                .then(|| percentile(&all, 0.5))
                .flatten()
        }
        _ => None,
    };
    Summary {
        workload,
        target: target.to_string(),
        ops,
        errors: mine.iter().map(|b| b.errors).sum(),
        p50: percentile(&sorted, 0.5),
        p99: percentile(&sorted, 0.99),
        cpu_per_op: cpu.filter(|_| ops > 0).map(|c| c / ops as f64),
        extra,
    }
}

pub fn summary_line(s: &Summary, floor: Option<&Summary>) -> Value {
    json!({
        "summary": true, "key": s.workload.key(), "workload": s.workload.name(), "target": s.target, "ops": s.ops,
        "errors": s.errors, "p50Ms": s.p50.map(round3), "p99Ms": s.p99.map(round3),
        "cpuPerOpMs": s.cpu_per_op.map(round3), "extra": s.extra.map(round3),
        "floorP50Ms": floor.and_then(|f| f.p50).map(round3),
        "floorP99Ms": floor.and_then(|f| f.p99).map(round3),
        "floorCpuPerOpMs": floor.and_then(|f| f.cpu_per_op).map(round3),
    })
}

fn cell(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(x) if x >= 100.0 => format!("{x:.0}"),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

fn extra_cell(s: &Summary) -> String {
    match (s.workload, s.extra) {
        (Workload::Parallel, Some(x)) => format!("{x:.0} turns/s"),
        (Workload::Spawn, Some(x)) => format!("all announced {x:.0} ms"),
        _ => String::new(),
    }
}

/// The markdown table: a row per (workload, target), the floor's figures beside each.
pub fn table(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "| workload | target | ops | errors | p50 ms | p99 ms | CPU/op ms | p50 / floor | floor p50 ms | floor p99 ms | floor CPU/op ms | |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in summaries {
        let floor = summaries
            .iter()
            .find(|f| f.workload == s.workload && f.target == FLOOR);
        let ratio = s.p50.zip(floor.and_then(|f| f.p50)).map(|(a, b)| a / b);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.workload.name(),
            s.target,
            s.ops,
            s.errors,
            cell(s.p50),
            cell(s.p99),
            cell(s.cpu_per_op),
            ratio.map_or("–".into(), |r| format!("{r:.1}×")),
            cell(floor.and_then(|f| f.p50)),
            cell(floor.and_then(|f| f.p99)),
            cell(floor.and_then(|f| f.cpu_per_op)),
            extra_cell(s),
        );
    }
    out
}

/// Appends JSON lines to the `--out` file, if any.
pub struct Out(Option<std::fs::File>);

impl Out {
    pub fn open(path: Option<&std::path::Path>) -> anyhow::Result<Self> {
        Ok(Self(path.map(std::fs::File::create).transpose()?))
    }

    pub fn line(&mut self, value: &Value) -> anyhow::Result<()> {
        if let Some(file) = &mut self.0 {
            writeln!(file, "{value}")?;
        }
        Ok(())
    }
}
