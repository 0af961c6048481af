//! Signals to the host (decisions 4 and 9): a tool runs in its own process
//! group, so the terminal's Ctrl-C, a `kill`, or the terminal closing reach
//! only the host, and only the host can kill the tool's group. SIGINT,
//! SIGTERM and SIGHUP therefore set one cancel flag that a running request or
//! tool call watches. SIGINT in the assistant then only stops the current
//! message; otherwise, once the running work has stopped (its group killed),
//! the host exits with 128+N. A signal that arrives while nothing runs ends
//! the host at once, as it would have without a handler.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by any of the three signals; the running request or call stops.
static CANCEL: AtomicBool = AtomicBool::new(false);
/// The signal the host must end with, once the running work has stopped.
static ENDING: AtomicI32 = AtomicI32::new(0);
/// Work is running that must be stopped before the host ends.
static BUSY: AtomicBool = AtomicBool::new(false);
/// SIGINT ends the host too (no prompt to come back to).
static INT_ENDS: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    CANCEL.store(true, Ordering::SeqCst);
    if signal != libc::SIGINT || INT_ENDS.load(Ordering::SeqCst) {
        ENDING.store(signal, Ordering::SeqCst);
        if !BUSY.load(Ordering::SeqCst) {
            // SAFETY: signal(2) and raise(3) are async-signal-safe; nothing
            // runs that needs stopping, so the default action ends us.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::raise(signal);
            }
        }
    }
}

/// Routes SIGINT, SIGTERM and SIGHUP to the cancel flag. With
/// `interrupt_ends`, SIGINT ends the host like the other two.
pub fn install(interrupt_ends: bool) {
    INT_ENDS.store(interrupt_ends, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only touches atomics and calls
        // async-signal-safe functions; the sigaction struct is initialised.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Runs `work` with a fresh cancel flag that the signals set. A signal that
/// ends the host and comes meanwhile only stops `work`; call `end_if_signalled`
/// once what it produced is shown.
pub fn guarded<T>(work: impl FnOnce(&AtomicBool) -> T) -> T {
    CANCEL.store(false, Ordering::SeqCst);
    BUSY.store(true, Ordering::SeqCst);
    let result = work(&CANCEL);
    BUSY.store(false, Ordering::SeqCst);
    CANCEL.store(false, Ordering::SeqCst);
    result
}

/// Exits with 128+N when SIGTERM or SIGHUP (or SIGINT where it ends the
/// host) came while work ran.
pub fn end_if_signalled() {
    let signal = ENDING.load(Ordering::SeqCst);
    if signal != 0 {
        std::process::exit(crate::exit::of_signal(signal));
    }
}
