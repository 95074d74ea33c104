//! What the kernel knows about a process (Linux `/proc`): CPU time, memory, open files and
//! the CPUs it may run on, for the gateway under test and its children.

use std::time::Duration;

/// CPU time (user + system) a process has used so far, or `None` if it is gone: the sum over
/// all its threads, the ones that have exited included, and nothing of its children (the
/// kernel adds a child's time to `cutime`/`cstime`, not to these fields, and only once the
/// child is reaped), so the CPU of a process without its descendants.
pub(crate) fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(ticks(utime + stime))
}

/// Peak resident set size of a process in KiB (`VmHWM`), or `None` if it is gone.
pub(crate) fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_field(pid, "VmHWM:")
}

/// Current resident set size of a process in KiB (`VmRSS`), or `None` if it is gone.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    status_field(pid, "VmRSS:")
}

fn status_field(pid: u32, name: &str) -> Option<u64> {
    status_text(pid, name)?.trim_end_matches("kB").trim().parse().ok()
}

/// The value of the `name` line of `/proc/<pid>/status`, trimmed.
fn status_text(pid: u32, name: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with(name))?;
    Some(line[name.len()..].trim().to_owned())
}

/// The CPUs a process may run on, as the kernel lists them (`Cpus_allowed_list`: `0`, `1-3`,
/// `0,2`), or `None` if it is gone.
pub(crate) fn allowed_cpus(pid: u32) -> Option<String> {
    status_text(pid, "Cpus_allowed_list:")
}

/// How many files (sockets and pipes included) a process has open, or `None` if it is gone or
/// not ours to look at.
pub(crate) fn open_files(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// The pids of a process's children (direct ones).
pub(crate) fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let path = task.path().join("children");
        if let Ok(text) = std::fs::read_to_string(path) {
            out.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// A process and all its descendants, the process first (children of children included).
pub(crate) fn tree(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut next = 0;
    while next < out.len() {
        let children = children(out[next]);
        out.extend(children.into_iter().filter(|child| !out.contains(child)).collect::<Vec<_>>());
        next += 1;
    }
    out
}

/// CPU time this process (the load generator) has used so far.
pub(crate) fn own_cpu_time() -> Duration {
    cpu_time(std::process::id()).unwrap_or_default()
}

/// Clock ticks to a duration (`_SC_CLK_TCK` is 100 on every Linux we run on).
fn ticks(ticks: u64) -> Duration {
    const TICKS_PER_SECOND: u64 = 100;
    Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_cpu_time_and_memory() {
        let pid = std::process::id();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(cpu_time(pid).is_some());
        assert!(peak_rss_kib(pid).is_some_and(|kib| kib > 0));
        assert!(rss_kib(pid).is_some_and(|kib| kib > 0));
        assert!(open_files(pid).is_some_and(|n| n >= 3), "stdin, stdout, stderr at least");
        assert!(allowed_cpus(pid).is_some_and(|cpus| !cpus.is_empty()));
        assert!(cpu_time(u32::MAX).is_none(), "no such process");
    }

    #[test]
    fn a_tree_holds_the_children() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("spawn sleep");
        let tree = tree(std::process::id());
        child.kill().expect("kill sleep");
        child.wait().expect("reap sleep");
        assert_eq!(tree[0], std::process::id());
        assert!(tree.contains(&child.id()), "{tree:?} lacks the child {}", child.id());
    }
}
