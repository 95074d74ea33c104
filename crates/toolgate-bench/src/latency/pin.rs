//! `latency --pin`: the load generator on one CPU, every process the harness starts (the
//! fronts, the upstream fixtures, and through inheritance everything they start) on the
//! others, so that on a small machine the client does not compete with the servers it
//! measures for the same cores.
//!
//! How. A process's CPU affinity is inherited: a child starts with the mask of the thread
//! that forked it, and keeps it across `exec`; its own threads and children inherit it in
//! turn. So:
//! - the load generator pins every thread it has (`/proc/self/task`) to its CPU; threads it
//!   creates later (tokio's blocking pool) start from a pinned thread and inherit that;
//! - each child is spawned ([`Pinning::spawn_on_servers`]) from a thread whose mask is, for
//!   the duration of the synchronous `spawn` call only, the servers' CPUs, and is put back
//!   right after. The child starts on the servers' CPUs before it runs a single instruction
//!   of its own, and so do its threads and the upstream it starts.
//!
//! Not `pre_exec` with `libc::sched_setaffinity` in the child: that needs `unsafe`, which the
//! workspace forbids. Not `taskset`: it would be one more program the machine must have, and
//! the commands recorded in the report would read `taskset -c ...` around every server.
//! Not setting the child's mask after `spawn` returns: by then it may already have started
//! threads that keep the old mask. nix's `sched_setaffinity` is a safe wrapper.
//!
//! What each side got is read back from `/proc/<pid>/status` (`Cpus_allowed_list`), not
//! assumed, and printed.

use anyhow::{Context as _, bail};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use serde::Serialize;

use crate::proc_stats;

/// Which CPUs each side runs on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Pinning {
    /// The load generator (this process, every thread).
    pub(crate) client: Vec<usize>,
    /// Every process the harness starts, and their descendants.
    pub(crate) servers: Vec<usize>,
}

impl Pinning {
    /// Splits the CPUs this process may run on: the first for the load generator, the others
    /// for the servers. With fewer than two there is nothing to split: the reason, in words.
    pub(crate) fn plan() -> Result<Pinning, String> {
        let cpus = usable_cpus().map_err(|error| format!("{error:#}"))?;
        split(&cpus)
    }

    /// Pins every thread of this process to the client's CPUs.
    pub(crate) fn pin_this_process(&self) -> anyhow::Result<()> {
        let mask = mask(&self.client)?;
        for tid in threads()? {
            let Ok(tid) = i32::try_from(tid) else { continue };
            // A thread that has exited since the listing is not an error.
            match sched_setaffinity(Pid::from_raw(tid), &mask) {
                Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
                Err(error) => bail!("cannot pin thread {tid} of the load generator: {error}"),
            }
        }
        Ok(())
    }

    /// Runs `spawn` (a synchronous spawn: nothing in it may await) with the calling thread on
    /// the servers' CPUs, so that the child it starts inherits them; then puts the thread back
    /// on the client's CPUs, also when `spawn` fails.
    pub(crate) fn spawn_on_servers<T>(&self, spawn: impl FnOnce() -> T) -> anyhow::Result<T> {
        let this_thread = Pid::from_raw(0);
        sched_setaffinity(this_thread, &mask(&self.servers)?)
            .context("cannot move the spawning thread to the servers' CPUs")?;
        let spawned = spawn();
        sched_setaffinity(this_thread, &mask(&self.client)?)
            .context("cannot move the spawning thread back to the load generator's CPU")?;
        Ok(spawned)
    }

    /// `CPU 0`, `CPUs 1-3`: how a side's CPUs read in the report.
    pub(crate) fn describe(cpus: &[usize]) -> String {
        let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
        format!("CPU{} {}", if cpus.len() == 1 { "" } else { "s" }, list.join(","))
    }
}

/// The CPUs this thread may run on (before pinning: the process's, as `taskset` or a cgroup
/// cpuset left them).
fn usable_cpus() -> anyhow::Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("cannot read this process's CPUs")?;
    Ok((0..CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect())
}

/// The first CPU for the client, the rest for the servers; an error in words with fewer than
/// two.
fn split(cpus: &[usize]) -> Result<Pinning, String> {
    match cpus {
        [] => Err("the kernel lists no CPU this process may run on".to_owned()),
        [only] => Err(format!(
            "this process may run on one CPU only (CPU {only}); pinning needs at least two, one \
             for the load generator and one or more for the gateway and its upstream"
        )),
        [first, rest @ ..] => Ok(Pinning { client: vec![*first], servers: rest.to_vec() }),
    }
}

fn mask(cpus: &[usize]) -> anyhow::Result<CpuSet> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).with_context(|| format!("CPU {cpu} is beyond what a CPU set holds"))?;
    }
    Ok(set)
}

/// The distinct `Cpus_allowed_list`s of this process's threads now, each with how many
/// threads have it (one entry once pinned).
pub(crate) fn this_process_cpus() -> Vec<(String, usize)> {
    cpus_of(&threads().unwrap_or_default())
}

/// The ids of this process's threads.
fn threads() -> anyhow::Result<Vec<u32>> {
    let tasks = std::fs::read_dir("/proc/self/task").context("cannot list /proc/self/task")?;
    Ok(tasks.flatten().filter_map(|task| task.file_name().to_str()?.parse().ok()).collect())
}

/// The CPUs of a kernel CPU list (`0-2,5` is 0, 1, 2 and 5); `None` if it does not read as
/// one.
pub(crate) fn parse_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|part| !part.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => cpus.extend(first.parse::<usize>().ok()?..=last.parse().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// The distinct `Cpus_allowed_list`s of `pids`, each with how many of them have it.
pub(crate) fn cpus_of(pids: &[u32]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for list in pids.iter().filter_map(|&pid| proc_stats::allowed_cpus(pid)) {
        match out.iter_mut().find(|(known, _)| *known == list) {
            Some((_, count)) => *count += 1,
            None => out.push((list, 1)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cpu_is_the_clients() {
        let pinning = split(&[0, 1]).expect("two CPUs");
        assert_eq!((pinning.client, pinning.servers), (vec![0], vec![1]));
        let pinning = split(&[2, 5, 6, 7]).expect("four CPUs");
        assert_eq!((pinning.client, pinning.servers), (vec![2], vec![5, 6, 7]));
        let why = split(&[3]).expect_err("one CPU");
        assert!(why.contains("one CPU only (CPU 3)"), "{why}");
        assert!(split(&[]).is_err());
    }

    #[test]
    fn kernel_cpu_lists() {
        assert_eq!(parse_list("0"), Some(vec![0]));
        assert_eq!(parse_list("1-3,6"), Some(vec![1, 2, 3, 6]));
        assert_eq!(parse_list("0,2\n"), Some(vec![0, 2]));
        assert_eq!(parse_list("x"), None);
    }

    #[test]
    fn cpus_read_as_words() {
        assert_eq!(Pinning::describe(&[0]), "CPU 0");
        assert_eq!(Pinning::describe(&[1, 2, 3]), "CPUs 1,2,3");
    }

    #[test]
    fn a_child_spawned_on_the_servers_cpus_runs_there() {
        // Only meaningful with two CPUs; on one, planning says why and there is nothing to do.
        let Ok(pinning) = Pinning::plan() else { return };
        let before = sched_getaffinity(Pid::from_raw(0)).expect("this thread's mask");
        let mut child = pinning
            .spawn_on_servers(|| std::process::Command::new("sleep").arg("30").spawn())
            .expect("pinned spawn")
            .expect("spawn sleep");
        let cpus = proc_stats::allowed_cpus(child.id());
        child.kill().expect("kill sleep");
        child.wait().expect("reap sleep");
        // The thread is back on the client's CPU; put it back as it was for the other tests.
        let now = sched_getaffinity(Pid::from_raw(0)).expect("this thread's mask");
        sched_setaffinity(Pid::from_raw(0), &before).expect("restore");
        assert_eq!(now, mask(&pinning.client).expect("mask"));
        assert_eq!(cpus.as_deref().and_then(parse_list), Some(pinning.servers.clone()));
    }
}
