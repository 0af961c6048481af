//! Threads for the server's calls, kept for the next call instead of one
//! started and ended per call: a thread costs tens of microseconds to start
//! and end, a sizeable part of a small call's round trip. There is no limit
//! on the calls running at once (each has a thread, as the protocol lets
//! a client cancel any of them); at most `MAX_IDLE` threads wait.

use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// Threads kept waiting for a call.
const MAX_IDLE: usize = 8;

type Job = Box<dyn FnOnce() + Send>;

pub struct Pool {
    jobs: Option<mpsc::Sender<Job>>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

struct Shared {
    /// Threads waiting on `jobs`: a job is sent only when one waits, so it
    /// never queues behind another.
    idle: Mutex<usize>,
    jobs: Mutex<mpsc::Receiver<Job>>,
}

impl Pool {
    pub fn new() -> Pool {
        let (sender, receiver) = mpsc::channel();
        Pool {
            jobs: Some(sender),
            shared: Arc::new(Shared {
                idle: Mutex::new(0),
                jobs: Mutex::new(receiver),
            }),
            threads: Vec::new(),
        }
    }

    /// Runs `job` on a waiting thread, or on a new one.
    pub fn run(&mut self, job: impl FnOnce() + Send + 'static) {
        let job: Job = Box::new(job);
        {
            let mut idle = self.shared.idle.lock().unwrap_or_else(|e| e.into_inner());
            if *idle > 0 {
                if let Some(jobs) = &self.jobs {
                    *idle -= 1;
                    // A waiting thread receives it: it cannot fail while
                    // the receiver lives in `shared`.
                    let _ = jobs.send(job);
                    return;
                }
            }
        }
        self.threads.retain(|t| !t.is_finished());
        let shared = self.shared.clone();
        self.threads
            .push(std::thread::spawn(move || serve(job, &shared)));
    }

    /// Waits for every job to finish, then for the threads to end.
    pub fn finish(mut self) {
        self.jobs = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn serve(first: Job, shared: &Shared) {
    let mut job = first;
    loop {
        job();
        {
            let mut idle = shared.idle.lock().unwrap_or_else(|e| e.into_inner());
            if *idle >= MAX_IDLE {
                return;
            }
            *idle += 1;
        }
        let next = shared.jobs.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match next {
            Ok(next) => job = next,
            // The pool is finishing.
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn jobs_run_at_once_and_threads_are_kept() {
        let mut pool = Pool::new();
        let done = Arc::new(AtomicUsize::new(0));
        // Three jobs that wait for each other: each needs its own thread.
        let all = Arc::new(std::sync::Barrier::new(3));
        for _ in 0..3 {
            let (done, all) = (done.clone(), all.clone());
            pool.run(move || {
                all.wait();
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        let idle = |pool: &Pool| *pool.shared.idle.lock().unwrap();
        while idle(&pool) < 3 {
            std::thread::sleep(Duration::from_millis(1));
        }
        // The next jobs, one at a time, reuse the waiting threads.
        for _ in 0..10 {
            let done = done.clone();
            pool.run(move || {
                done.fetch_add(1, Ordering::SeqCst);
            });
            while idle(&pool) < 3 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert_eq!(pool.threads.len(), 3);
        pool.finish();
        assert_eq!(done.load(Ordering::SeqCst), 13);
    }

    #[test]
    fn a_long_job_does_not_hold_up_the_next() {
        let mut pool = Pool::new();
        let (tell, told) = mpsc::channel();
        let (release, wait) = mpsc::channel::<()>();
        pool.run(move || {
            let _ = wait.recv();
        });
        pool.run(move || tell.send(()).unwrap());
        told.recv_timeout(Duration::from_secs(10))
            .expect("the second job ran while the first waited");
        release.send(()).unwrap();
        pool.finish();
    }
}
