//! The threads scripts run on: a few threads of their own (one per core, at most
//! [`MAX_WORKERS`]), so that a script busy with its budget occupies one of these and never
//! one of the gateway's runtime workers, however many scripts run at once. A Rune VM cannot
//! move between threads, so each thread runs the invocations given to it on a single-threaded
//! runtime, and a new invocation goes to the thread with the fewest running. The caller
//! awaits the end; dropping the caller's future (a cancelled call, a hook's timeout) stops
//! the invocation at its next await or slice.
//!
//! A running invocation gives its thread up between slices of its budget
//! (`sandbox::SLICE`), so the invocations of one thread share it fairly.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt as _;
use tokio::sync::{Notify, mpsc, oneshot};

/// The most threads the pool has (it has one per core up to this).
pub const MAX_WORKERS: usize = 8;

/// An invocation handed to a thread: made there, so that it need not be `Send`.
type Job = Box<dyn FnOnce() -> Pin<Box<dyn Future<Output = ()>>> + Send>;

struct Worker {
    jobs: mpsc::UnboundedSender<Job>,
    running: Arc<AtomicUsize>,
}

fn workers() -> &'static [Worker] {
    static WORKERS: OnceLock<Vec<Worker>> = OnceLock::new();
    WORKERS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        (0..cores.clamp(1, MAX_WORKERS)).filter_map(start).collect()
    })
}

/// Starts one thread; `None` (logged) when the system refuses a thread or a runtime.
fn start(index: usize) -> Option<Worker> {
    let (jobs, queue) = mpsc::unbounded_channel::<Job>();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "a script thread's runtime could not be built");
            return None;
        }
    };
    let started =
        std::thread::Builder::new().name(format!("toolgate-script-{index}")).spawn(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, receive(queue));
        });
    match started {
        Ok(_) => Some(Worker { jobs, running: Arc::new(AtomicUsize::new(0)) }),
        Err(error) => {
            tracing::error!(%error, "a script thread could not be started");
            None
        }
    }
}

/// How long a thread that has just become idle looks for the next invocation before it sleeps:
/// waking a sleeping thread costs about 25 µs here, and calls often come in runs.
const LINGER: Duration = Duration::from_micros(100);

thread_local! {
    /// Told when the last invocation of this thread ends.
    static IDLE: Rc<Notify> = Rc::new(Notify::new());
}

/// Runs each invocation given to this thread, lingering a moment when it becomes idle.
async fn receive(mut queue: mpsc::UnboundedReceiver<Job>) {
    let idle = IDLE.with(Rc::clone);
    loop {
        tokio::select! {
            biased;
            job = queue.recv() => match job {
                Some(job) => {
                    tokio::task::spawn_local(job());
                }
                None => return,
            },
            () = idle.notified() => {
                let until = tokio::time::Instant::now() + LINGER;
                while tokio::time::Instant::now() < until {
                    match queue.try_recv() {
                        Ok(job) => {
                            tokio::task::spawn_local(job());
                            break;
                        }
                        Err(mpsc::error::TryRecvError::Empty) => std::hint::spin_loop(),
                        Err(mpsc::error::TryRecvError::Disconnected) => return,
                    }
                }
            }
        }
    }
}

/// How a task on the pool ended without its value.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lost {
    /// It panicked, saying this.
    Panicked(String),
    /// There is no thread to run it on.
    NoThread,
}

/// Makes the future `make` returns on one of the pool's threads and runs it there; its
/// output once it ends.
pub(crate) async fn run<M, F>(make: M) -> Result<F::Output, Lost>
where
    M: FnOnce() -> F + Send + 'static,
    F: Future + 'static,
    F::Output: Send + 'static,
{
    let worker = workers()
        .iter()
        .min_by_key(|worker| worker.running.load(Ordering::Relaxed))
        .ok_or(Lost::NoThread)?;
    let running = worker.running.clone();
    running.fetch_add(1, Ordering::Relaxed);
    let counted = running.clone();
    let (done, outcome) = oneshot::channel();
    let job: Job = Box::new(move || {
        Box::pin(async move {
            let _count = Leaving(running);
            let mut done = done;
            let task = AssertUnwindSafe(async move { make().await }).catch_unwind();
            tokio::select! {
                ended = task => {
                    let _ = done.send(ended.map_err(|panic| super::panic_message(&*panic)));
                }
                // The caller stopped waiting: drop the invocation here and now.
                () = done.closed() => {}
            }
        })
    });
    if worker.jobs.send(job).is_err() {
        counted.fetch_sub(1, Ordering::Relaxed);
        return Err(Lost::NoThread);
    }
    match outcome.await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(panic)) => Err(Lost::Panicked(panic)),
        Err(_) => Err(Lost::Panicked("the script thread ended".to_owned())),
    }
}

/// Counts an invocation out of its thread when it ends, however it ends.
struct Leaving(Arc<AtomicUsize>);

impl Drop for Leaving {
    fn drop(&mut self) {
        if self.0.fetch_sub(1, Ordering::Relaxed) == 1 {
            // On the invocation's own thread: the last one ended.
            IDLE.with(|idle| idle.notify_one());
        }
    }
}
