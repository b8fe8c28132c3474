//! User callbacks run at the end of a capture or a reduction: their exceptions go to
//! `on_error`, and `on_error`'s own to `sys.unraisablehook`. A Ctrl-C that lands while a
//! callback runs is not one of them: it is delivered again (see [`rearm_interrupt`]).

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

/// Call `hook(arg)`; an exception goes to [`report_error`].
pub fn call_hook(
    py: Python<'_>,
    hook: &Option<Py<PyAny>>,
    arg: Bound<'_, PyAny>,
    on_error: &Option<Py<PyAny>>,
) {
    let Some(f) = hook else { return };
    if let Err(e) = f.call1(py, (arg,)) {
        report_error(py, on_error, e);
    }
}

/// Hand `err` to `on_error`, or to `sys.unraisablehook` without one.
pub fn report_error(py: Python<'_>, on_error: &Option<Py<PyAny>>, err: PyErr) {
    if rearm_interrupt(py, &err) {
        return;
    }
    match on_error {
        Some(h) => {
            if let Err(e2) = h.call1(py, (err.value(py).clone(),)) {
                if !rearm_interrupt(py, &e2) {
                    e2.write_unraisable(py, Some(h.bind(py)));
                }
            }
        }
        None => err.write_unraisable(py, None),
    }
}

/// A Ctrl-C handled inside a callback raises `KeyboardInterrupt` there, and the interpreter
/// has already cleared the signal: handing the exception to `on_error` or the unraisable
/// hook would lose it, and a loop waiting for its next signal check would never stop. So it
/// is re-armed instead, as if SIGINT arrived again, and raises at the next check (the
/// loop's, or the next line of Python). Returns whether `err` was one.
fn rearm_interrupt(py: Python<'_>, err: &PyErr) -> bool {
    if !err.is_instance_of::<PyKeyboardInterrupt>(py) {
        return false;
    }
    // SAFETY: PyErr_SetInterrupt only sets the interpreter's SIGINT flag (what the C
    // signal handler does); it takes no arguments and is callable with the GIL held.
    unsafe { pyo3::ffi::PyErr_SetInterrupt() };
    true
}
