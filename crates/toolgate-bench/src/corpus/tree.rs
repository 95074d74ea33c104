//! The directory tree `server-filesystem` is asked about: some of this crate's own sources
//! (real Rust, compiled into the binary), and generated folders of data files and notes of
//! many sizes, so that listings are long and `list_directory_with_sizes` has something to
//! sort. Everything is deterministic: the same build writes the same tree.

use std::path::Path;

use super::put;

/// This crate's sources, as (path in the tree, text).
const SOURCES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../../Cargo.toml")),
    ("src/main.rs", include_str!("../main.rs")),
    ("src/binaries.rs", include_str!("../binaries.rs")),
    ("src/portable.rs", include_str!("../portable.rs")),
    ("src/proc_stats.rs", include_str!("../proc_stats.rs")),
    ("src/latency.rs", include_str!("../latency.rs")),
    ("src/latency/machine.rs", include_str!("../latency/machine.rs")),
    ("src/latency/process.rs", include_str!("../latency/process.rs")),
    ("src/latency/report.rs", include_str!("../latency/report.rs")),
    ("src/latency/session.rs", include_str!("../latency/session.rs")),
    ("src/latency/stats.rs", include_str!("../latency/stats.rs")),
    ("src/latency/target.rs", include_str!("../latency/target.rs")),
    ("src/scale.rs", include_str!("../scale.rs")),
    ("src/scale/sessions.rs", include_str!("../scale/sessions.rs")),
    ("src/scale/tools.rs", include_str!("../scale/tools.rs")),
    ("src/startup.rs", include_str!("../startup.rs")),
    ("src/startup/gateway.rs", include_str!("../startup/gateway.rs")),
    ("src/startup/mcp_http.rs", include_str!("../startup/mcp_http.rs")),
    ("src/startup/report.rs", include_str!("../startup/report.rs")),
];

/// The source file `read_text_file` reads (about 23 KB: over any small token budget).
pub(crate) const LARGE_SOURCE: &str = "src/latency.rs";

/// Cities of the generated measurement files.
const STATIONS: &[&str] = &[
    "amsterdam",
    "berlin",
    "copenhagen",
    "dublin",
    "edinburgh",
    "florence",
    "geneva",
    "helsinki",
    "istanbul",
    "krakow",
    "lisbon",
    "madrid",
    "naples",
    "oslo",
    "prague",
    "reykjavik",
    "stockholm",
    "tallinn",
    "utrecht",
    "vienna",
    "warsaw",
    "zagreb",
];

/// Writes the tree under `root` (which must exist).
pub(crate) fn write(root: &Path) -> anyhow::Result<()> {
    for (path, text) in SOURCES {
        put(root, path, text)?;
    }
    put(root, "README.md", README)?;
    // One CSV per station and year, of growing length: 44 files from about 100 B to 9 KB.
    for (i, station) in STATIONS.iter().enumerate() {
        for year in [2024, 2025] {
            let rows = 3 + (i * 7 + (year - 2024) as usize * 13) % 97;
            put(root, &format!("data/{year}/{station}.csv"), &measurements(i, year, rows))?;
        }
    }
    // Notes in a few nested folders, for directory_tree's depth.
    for (folder, topics) in NOTES {
        for (j, topic) in topics.iter().enumerate() {
            let text = format!(
                "# {topic}\n\nNotes on {topic}, kept in {folder}.\n\n{}",
                "- an item of the list\n".repeat(1 + j * 3)
            );
            put(root, &format!("{folder}/{}.md", topic.replace(' ', "-")), &text)?;
        }
    }
    Ok(())
}

const README: &str = "# bench\n\nA copy of toolgate-bench's sources and generated data, made by \
                      `toolgate-bench corpus` for the MCP servers to list, search and read.\n";

const NOTES: &[(&str, &[&str])] = &[
    ("docs", &["overview", "latency method", "startup method"]),
    ("docs/design", &["load generator", "peer gateways", "reporting"]),
    ("docs/design/history", &["first numbers", "binary size"]),
    ("notes/2025", &["january", "february", "march", "april"]),
];

/// A CSV of hourly readings (deterministic, different per station and year).
fn measurements(station: usize, year: i32, rows: usize) -> String {
    let mut csv = String::from("timestamp,temperature_c,humidity_pct,pressure_hpa\n");
    for row in 0..rows {
        let x = (station * 31 + row * 17 + year as usize) % 200;
        csv.push_str(&format!(
            "{year}-01-{:02}T{:02}:00:00Z,{:.1},{},{}\n",
            1 + row / 24,
            row % 24,
            -5.0 + x as f64 / 10.0,
            40 + x % 55,
            990 + x % 40
        ));
    }
    csv
}
