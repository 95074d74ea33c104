//! The machine a run was taken on, as Linux describes it.

use serde::Serialize;

/// CPU, cores, memory, kernel and distribution.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    pub(crate) cpu: String,
    /// Logical CPUs this process may run on.
    pub(crate) cores: usize,
    pub(crate) memory_mib: u64,
    pub(crate) kernel: String,
    pub(crate) os: String,
}

impl Machine {
    /// Reads `/proc` and `/etc/os-release`; what cannot be read is `unknown`.
    pub(crate) fn describe() -> Self {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = field(&cpuinfo, "model name", ':').unwrap_or("unknown").to_owned();
        let memory_mib = field(&read("/proc/meminfo"), "MemTotal", ':')
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024);
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
        let os = field(&read("/etc/os-release"), "PRETTY_NAME", '=')
            .map(|v| v.trim_matches('"').to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            memory_mib,
            kernel: if kernel.is_empty() { "unknown".to_owned() } else { kernel },
            os,
        }
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {} cores, {} MiB, Linux {}, {}",
            self.cpu, self.cores, self.memory_mib, self.kernel, self.os
        )
    }
}

/// The value of the first `name<sep>value` line.
fn field<'a>(text: &'a str, name: &str, separator: char) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(separator)?;
        (key.trim() == name).then(|| value.trim())
    })
}
