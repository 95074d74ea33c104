//! `toolgate-bench tokens`: what each transform saves, in tokens, on the corpus of
//! `toolgate-bench corpus` (docs/token-economy.md).
//!
//! Every setup of [`setups::SETUPS`] is built from its `[[pipeline]]` TOML by toolgate's
//! config loader and [`toolgate_interceptors::build_pipeline`], and its response phase runs
//! on every item's result (`Message::ToolResult`, with a `CallContext` whose target is the
//! item's server and tool, definition included), as the gateway runs it. Tokens are counted
//! in `o200k_base` over what a model reads of the result
//! ([`toolgate_interceptors::transform::model_text`]), before and after. Every output is
//! also checked ([`check`]): still a valid `CallToolResult` for its tool.
//!
//! - [`setups`]: the configurations measured;
//! - [`formats`]: compact JSON, pretty JSON and TOON of the JSON items;
//! - [`report`]: the tables, the JSON report and the generated part of the doc.

mod check;
mod formats;
pub(crate) mod report;
mod setups;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::time::Instant;

use anyhow::Context as _;
use serde::Serialize;
use toolgate_audit::EventBus;
use toolgate_core::mcp;
use toolgate_intercept::{
    CallContext, DecisionKind, InterceptionEvent, Message, Pipeline, Principal, Target,
};
use toolgate_interceptors::Services;
use toolgate_interceptors::transform::model_text;
use toolgate_llm::tokens::Encoding;
use toolgate_testkit::fake_llm::{FakeLlm, Script, Turn};

use self::formats::Formats;
use self::setups::Setup;
use crate::corpus::{self, Item};

/// How tokens are counted.
const ENCODING: Encoding = Encoding::O200kBase;

/// Options of `tokens`.
#[derive(Debug, clap::Args)]
pub(crate) struct TokensArgs {
    /// The corpus to measure (from `toolgate-bench corpus --out DIR`) [default: make one now,
    /// in a temporary folder]
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,
    /// Rewrite the generated part of this Markdown file (docs/token-economy.md), between its
    /// `<!-- token-economy:begin -->` and `<!-- token-economy:end -->` lines.
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
    /// Also write the results to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write every transformed result into DIR/<setup>/<item>.json.
    #[arg(long, value_name = "DIR")]
    outputs: Option<PathBuf>,
    #[command(flatten)]
    sources: corpus::Sources,
}

/// Everything measured.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) encoding: &'static str,
    pub(crate) items: Vec<ItemRow>,
    pub(crate) setups: Vec<SetupRun>,
}

/// One corpus item as it came.
#[derive(Debug, Serialize)]
pub(crate) struct ItemRow {
    pub(crate) name: String,
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) source: String,
    pub(crate) tokens: usize,
    pub(crate) bytes: usize,
    /// Its JSON in three encodings, for items that are JSON.
    pub(crate) json: Option<Formats>,
    /// Whether the tool declares an `outputSchema`.
    pub(crate) output_schema: bool,
}

/// One setup over the corpus.
#[derive(Debug, Serialize)]
pub(crate) struct SetupRun {
    pub(crate) name: &'static str,
    pub(crate) about: &'static str,
    pub(crate) toml: String,
    /// Why it was not measured, if it was not.
    pub(crate) left_out: Option<String>,
    pub(crate) rows: Vec<Row>,
}

/// One setup on one item.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) item: String,
    pub(crate) before: usize,
    pub(crate) after: usize,
    pub(crate) changed: bool,
    /// The error of a transform that failed (the result then went on unchanged).
    pub(crate) failed: Option<String>,
    /// A refusal (a transform never refuses: this is a bug).
    pub(crate) refused: Option<String>,
    /// What makes the output an invalid result ([`check::problems`]).
    pub(crate) problems: Vec<String>,
    pub(crate) micros: u128,
}

impl SetupRun {
    pub(crate) fn measured(&self) -> bool {
        self.left_out.is_none()
    }
}

pub(crate) async fn run(args: TokensArgs) -> anyhow::Result<()> {
    let items = match &args.corpus {
        Some(dir) => corpus::read(dir)?,
        None => corpus::make(&args.sources).await?,
    };
    let llm = Llm::start().await;
    let base_url = llm.base_url();
    let report = measure(&items, base_url.as_deref(), args.outputs.as_deref()).await?;
    print!("{}", report::text(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.write {
        report::write_doc(path, &report)?;
        // Relative to where it ran: the output is kept in bench/results, with no machine's
        // paths in it.
        let cwd = std::env::current_dir().unwrap_or_default();
        let shown = path.strip_prefix(&cwd).unwrap_or(path);
        println!("rewrote the generated part of {}", shown.display());
    }
    Ok(())
}

/// Runs every setup over `items`; `llm` is the base URL of an OpenAI-compatible endpoint
/// for the setups that need one.
pub(crate) async fn measure(
    items: &[Item],
    llm: Option<&str>,
    outputs: Option<&Path>,
) -> anyhow::Result<Report> {
    let rows = items.iter().map(item_row).collect();
    let mut setups = Vec::new();
    for setup in setups::SETUPS {
        setups.push(run_setup(setup, items, llm, outputs).await?);
    }
    Ok(Report { encoding: ENCODING.name(), items: rows, setups })
}

fn item_row(item: &Item) -> ItemRow {
    let text = model_text(&item.result);
    ItemRow {
        name: item.name.clone(),
        server: item.server.clone(),
        tool: item.tool.name.to_string(),
        source: item.source.clone(),
        tokens: ENCODING.count(&text),
        bytes: text.len(),
        json: formats::json_of(&item.result).map(|value| formats::measure(&value, ENCODING)),
        output_schema: item.tool.output_schema.is_some(),
    }
}

async fn run_setup(
    setup: &Setup,
    items: &[Item],
    llm: Option<&str>,
    outputs: Option<&Path>,
) -> anyhow::Result<SetupRun> {
    let mut run = SetupRun {
        name: setup.name,
        about: setup.about,
        toml: setup.text(None),
        left_out: None,
        rows: Vec::new(),
    };
    let missing = setup.missing();
    if !missing.is_empty() {
        run.left_out = Some(format!("not in this build yet: {}", missing.join(", ")));
        return Ok(run);
    }
    if setup.needs_llm() && llm.is_none() {
        run.left_out = Some("needs an LLM endpoint, and no fake LLM is available".into());
        return Ok(run);
    }
    let entries = setup.entries(llm)?;
    let services = Services::new(EventBus::new());
    let pipeline =
        toolgate_interceptors::build_pipeline(&entries, &services).map_err(|errors| {
            let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::anyhow!("the {} setup does not build: {}", setup.name, errors.join("; "))
        })?;
    let dir = match outputs {
        Some(outputs) => {
            let dir = outputs.join(setup.name);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            Some(dir)
        }
        None => None,
    };
    for item in items {
        let (row, after) = run_item(&pipeline, item).await;
        if let (Some(dir), Some(after)) = (&dir, &after) {
            let path = dir.join(format!("{}.json", item.name));
            std::fs::write(&path, serde_json::to_string_pretty(after)? + "\n")
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        run.rows.push(row);
    }
    Ok(run)
}

/// Runs `pipeline`'s response phase on `item`'s result.
async fn run_item(pipeline: &Pipeline, item: &Item) -> (Row, Option<mcp::CallToolResult>) {
    let mut ctx = CallContext::new(Principal::anonymous());
    ctx.session = Some("token-economy".into());
    ctx.target = Some(Target {
        server: item.server.clone(),
        original: item.tool.name.to_string(),
        exposed: format!("{}__{}", item.server, item.tool.name),
        tool: Some(Arc::new(item.tool.clone())),
    });
    let before_text = model_text(&item.result);
    let started = Instant::now();
    let answer = pipeline
        .response(InterceptionEvent::ToolsCall, Message::ToolResult(item.result.clone()), &mut ctx)
        .await;
    let micros = started.elapsed().as_micros();
    let failed = ctx.decisions.iter().find_map(|decision| match &decision.kind {
        DecisionKind::Failed { error, .. } => Some(format!("{}: {error}", decision.interceptor)),
        _ => None,
    });
    let mut row = Row {
        item: item.name.clone(),
        before: ENCODING.count(&before_text),
        after: 0,
        changed: false,
        failed,
        refused: None,
        problems: Vec::new(),
        micros,
    };
    let after = match answer {
        Ok(Message::ToolResult(after)) => after,
        Ok(other) => {
            row.problems.push(format!("the response phase answered with a {other:?}"));
            return (row, None);
        }
        Err(refusal) => {
            row.refused = Some(format!("{}: {}", refusal.interceptor, refusal.reason));
            return (row, None);
        }
    };
    row.after = ENCODING.count(&model_text(&after));
    row.changed = after != item.result;
    row.problems = check::problems(&item.tool, &item.result, &after);
    (row, Some(after))
}

/// The fake OpenAI-compatible endpoint `enrich` is measured against: toolgate-testkit's
/// fake LLM, answering every request with [`fake_summary`].
struct Llm {
    fake: Option<FakeLlm>,
}

impl Llm {
    async fn start() -> Llm {
        let script = Script::respond(|request| {
            Turn::text(fake_summary(&request.last_user_text().unwrap_or_default()))
        });
        match FakeLlm::start(script).await {
            Ok(fake) => Llm { fake: Some(fake) },
            Err(error) => {
                eprintln!(
                    "toolgate-bench tokens: cannot start the fake LLM ({error}): enrich is left out"
                );
                Llm { fake: None }
            }
        }
    }

    fn base_url(&self) -> Option<String> {
        self.fake.as_ref().map(FakeLlm::base_url)
    }
}

/// What the fake LLM answers to `prompt`: how long the prompt is and its first five
/// non-empty lines after the instructions, each cut at 100 characters; about as long as a
/// short summary (100 to 200 tokens), not a real one.
fn fake_summary(prompt: &str) -> String {
    let lines: Vec<&str> = prompt.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut summary =
        format!("The result has {} lines ({} characters). It begins:\n", lines.len(), prompt.len());
    for line in lines.iter().skip(1).take(5) {
        let cut: String = line.trim().chars().take(100).collect();
        summary.push_str("- ");
        summary.push_str(&cut);
        summary.push('\n');
    }
    summary
}
