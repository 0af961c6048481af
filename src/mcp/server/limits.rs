//! What the HTTP server holds at most (decision 73): 64 tool calls running
//! at once (a call past them is answered 429 at once, never queued, so a
//! flood costs no memory), and 1,000 live sessions, a session idle for an
//! hour ending. When a new session would make 1,001, the one idle longest
//! among those running no call ends (decision 101): a client that left
//! without DELETE must not lock the server out of new ones, and a client
//! whose session ended this way is told 404, on which MCP clients start a
//! new one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Tool calls running at once.
pub const MAX_CALLS: usize = 64;
/// Sessions alive at once.
pub const MAX_SESSIONS: usize = 1000;
/// A session unused this long has ended.
pub const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// Places for running calls.
pub struct Slots {
    running: AtomicUsize,
    max: usize,
}

/// A place taken; dropping it gives the place back.
pub struct Slot<'a>(&'a Slots);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Slots {
    pub fn new(max: usize) -> Slots {
        Slots {
            running: AtomicUsize::new(0),
            max,
        }
    }

    /// A place, if one is free now.
    pub fn take(&self) -> Option<Slot<'_>> {
        let mut now = self.running.load(Ordering::SeqCst);
        loop {
            if now >= self.max {
                return None;
            }
            match self
                .running
                .compare_exchange(now, now + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Some(Slot(self)),
                Err(actual) => now = actual,
            }
        }
    }
}

/// One handshake session: its revision and its running calls.
pub struct Session {
    pub version: String,
    pub in_flight: Mutex<HashMap<String, Arc<AtomicBool>>>,
    last_used: Mutex<Instant>,
}

impl Session {
    fn busy(&self) -> bool {
        !self
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }

    fn idle_since(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancels every call it runs.
    pub fn cancel_all(&self) {
        for flag in self
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            flag.store(true, Ordering::SeqCst);
        }
    }
}

/// The live sessions, by id.
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    max: usize,
    idle: Duration,
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Sessions {
        Sessions {
            map: Mutex::default(),
            max,
            idle,
        }
    }

    /// A new session `id` under `version`: sessions idle too long end
    /// first, then, when still full, the one idle longest that runs no call.
    pub fn create(&self, id: String, version: String, now: Instant) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let idle = self.idle;
        map.retain(|_, s| s.busy() || now.saturating_duration_since(s.idle_since()) < idle);
        while map.len() >= self.max {
            let oldest = map
                .iter()
                .filter(|(_, s)| !s.busy())
                .min_by_key(|(_, s)| s.idle_since())
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => {
                    map.remove(&key);
                }
                // Every session runs a call: at most `MAX_CALLS` of them,
                // far fewer than the limit; keep them all.
                None => break,
            }
        }
        let session = Session {
            version,
            in_flight: Mutex::default(),
            last_used: Mutex::new(now),
        };
        map.insert(id, Arc::new(session));
    }

    /// The live session `id`, marked used now; one idle too long is ended.
    pub fn get(&self, id: &str, now: Instant) -> Option<Arc<Session>> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        let session = map.get(id)?.clone();
        let mut last = session.last_used.lock().unwrap_or_else(|e| e.into_inner());
        if now.saturating_duration_since(*last) >= self.idle && !session.busy() {
            drop(last);
            map.remove(id);
            return None;
        }
        *last = now.max(*last);
        drop(last);
        Some(session)
    }

    /// Ends session `id`, cancelling its calls; false when there was none.
    pub fn end(&self, id: &str) -> bool {
        let removed = self
            .map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        match removed {
            Some(session) => {
                session.cancel_all();
                true
            }
            None => false,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_and_given_back() {
        let slots = Slots::new(2);
        let a = slots.take().expect("first");
        let b = slots.take().expect("second");
        assert!(slots.take().is_none());
        drop(a);
        let c = slots.take().expect("a freed place");
        assert!(slots.take().is_none());
        drop((b, c));
        assert_eq!(slots.running.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn slots_hold_under_contention() {
        let slots = Arc::new(Slots::new(5));
        let peak = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (slots, peak) = (slots.clone(), peak.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        if let Some(_slot) = slots.take() {
                            let now = slots.running.load(Ordering::SeqCst);
                            peak.fetch_max(now, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(peak.load(Ordering::SeqCst) <= 5);
        assert_eq!(slots.running.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn idle_sessions_end() {
        let t0 = Instant::now();
        let hour = Duration::from_secs(3600);
        let s = Sessions::new(10, hour);
        s.create("a".into(), "v".into(), t0);
        s.create("b".into(), "v".into(), t0);
        assert!(s.get("a", t0 + hour / 2).is_some());
        // b was not used for an hour: gone. a was used half-way: alive.
        assert!(s.get("b", t0 + hour).is_none());
        assert!(s.get("a", t0 + hour).is_some());
        // A session running a call does not end while it runs.
        let busy = s.get("a", t0 + hour).unwrap();
        busy.in_flight
            .lock()
            .unwrap()
            .insert("1".into(), Arc::default());
        assert!(s.get("a", t0 + 3 * hour).is_some());
        assert!(s.end("a"));
        assert!(!s.end("a"));
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn a_full_table_ends_the_session_idle_longest() {
        let t0 = Instant::now();
        let sec = Duration::from_secs(1);
        let s = Sessions::new(3, SESSION_IDLE);
        for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
            s.create(id.into(), "v".into(), t0 + sec * i as u32);
        }
        // a is used again, and b runs a call: c is now the one to go.
        s.get("a", t0 + 10 * sec).unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        s.get("b", t0 + sec)
            .unwrap()
            .in_flight
            .lock()
            .unwrap()
            .insert("1".into(), flag.clone());
        s.create("d".into(), "v".into(), t0 + 11 * sec);
        assert_eq!(s.len(), 3);
        assert!(s.get("c", t0 + 12 * sec).is_none());
        for id in ["a", "b", "d"] {
            assert!(s.get(id, t0 + 12 * sec).is_some(), "{id}");
        }
        // Ending b cancels its call.
        assert!(s.end("b"));
        assert!(flag.load(Ordering::SeqCst));
    }
}
